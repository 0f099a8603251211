"""Programs that put the tiers together (may import any tier)."""
