"""``robogym_recorder``: the command line (cli: arguments, the live node or the offline check of a
bag) and the live node (node: subscriptions, rings, the verdict at the end)."""
