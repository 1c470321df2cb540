"""Grading a compiled battery: answers in, records out.

`answers` reads the answers file, `judges` talk to the judge (one module per backend), `transport`
retries and paces the HTTP calls, `verdict` and `contradiction` decode and check replies, `runner`
grades one answer at a time (T1, ask, re-ask, stern retry, adjudicate), `cache` keeps replies,
`session` opens all of it, `parallel` spreads a grading over processes, `calibrate` measures a
judge against the battery's exemplars. It never imports the battery language: a compiled battery is
all it needs.
"""
