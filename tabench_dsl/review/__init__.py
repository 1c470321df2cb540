"""What a person reads and decides after a grading: `totals` (the only place that counts),
`decisions` (human verdicts on `adjudicate` records), the HTML `report` and the results `viewer`,
whose pages are Jinja2 templates in `templates/`, rendered by `templating`."""
