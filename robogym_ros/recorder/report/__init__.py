"""The recorder's report: report.html with its figures, from a live recording or a bag.
"""
