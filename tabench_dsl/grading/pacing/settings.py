"""Every tuning constant of the pacer, each with why it has its value. Each was chosen against the
virtual-time runs (`tests/support/pacing_sim.py`) and the rate-limit bench
(`bench/ratelimit_bench.py --sweep`); a change here is judged by both."""

from __future__ import annotations

# -- the slow start (no rate known yet) -------------------------------------------------------------

#: Requests in flight before the first reply: two tell a bucket one request deep (the second is
#: refused) without sending a window into a bucket nobody knows.
START_WINDOW = 2
#: The window's growth a success: x1.25 a round trip, so less is in flight when the first 429 of a
#: deep bucket comes back (a doubling would send a whole window more into an empty bucket).
SLOW_GROWTH = 0.25

# -- the climb (a first rate guessed from the slow start, no header telling) ------------------------

#: The climb's step and the least time between two (doubling every 0.14 s at most: below the
#: server's rate its bucket is full, and what it refills meanwhile is lost).
CLIMB_STEP = 2**0.25
CLIMB_TICK = 0.035
#: The most steps one request's success takes (a sparse rate climbs by request, not by tick).
MAX_STEPS_A_SEND = 4
#: The climb's first turn, at most this long after its guess (about 3.8 a second). A bucket one
#: request deep refusing it is tried at LOW_PROBE times as slow, twice at most: 0.52 s and 1.04 s
#: land just above the round limits a strict gateway sets (2 and 1 a second), where the two 429s
#: it has left can find nothing closer.
FIRST_TURN = 0.26
#: Requests accepted between two push-backs that measure the rate however short their span.
MEASURED = 4
#: The widest bracket of rates (highest over lowest) whose middle the climb ends at; wider, the
#: least (a bucket whose depth the slow start overstated bounds its rate only loosely from above).
BRACKET_WIDTH = 1.25
#: The most requests through before the climb for which its bracket replays every send (a replay
#: costs a pass over the sends a depth tried).
REPLAYED_DEPTH = 32
#: Times a climb starts again, lower, when its first push-back comes too soon to measure by.
CLIMB_RESTARTS = 3

# -- a bucket one request deep, known by its 429s alone (`one_deep.GapBracket`) ---------------------

#: The climb's step an answer while no request was refused: a doubling where DOUBLING_SPARE 429s
#: are spared (an answer below the server's rate costs a turn, a 429 only one of those), else a
#: step a refusal brackets narrowly enough for the creep to close at little cost (a third of an
#: octave: a quarter spent 2.7% of a 10 a second run climbing from FIRST_TURN).
ONE_DEEP_CLIMB = 2.0
ONE_DEEP_STEP = 2 ** (1 / 3)
#: The 429s to spare from which the climb doubles: about 5 a second, 15 s of it; below, a doubling's
#: refusal leaves a bracket too wide for the one 429 left (at 5/s: 94.7% doubling, 97% stepping,
#: in virtual time).
DOUBLING_SPARE = 3
#: The slow start's second refused, and the first turn too: the next is this many times as slow
#: (twice: 1.8 a second, which a limit of 2 answers and the creep climbs from; a limit of 1 then
#: costs a third 429 and is paced at 0.9 a second).
LOW_PROBE = 2.0
#: The rise an answer with one 429 left to spare: the refusal that ends it leaves the pace within
#: this step (4.4%) under the server's, and a bracket twice as wide closes in 16 answers.
ONE_DEEP_CREEP = 2 ** (1 / 16)
#: 429s a bucket one request deep may cost, the slow start's that found it included: at least this
#: many, else this share of the answers so far or of those SPARED_SECONDS at the pace answered
#: bring (a strict gateway allows a few 429s, 5% of the calls at most; at 4% with the slow start's
#: one more, 5 a second refused a fourth of 79 calls, 5.1%, when the arrival jitter let a gap
#: under the limit through).
SPARED_REFUSALS = 3
SPARED_SHARE = 0.045
SPARED_SECONDS = 15.0
#: A bracket this narrow (answered gap over refused gap), or narrower than the margin a pace keeps
#: (ARRIVAL_JITTER, MARGIN_SHARE of a turn at most: probing it would find the jitter, not the
#: rate), is settled: the pace stays (or is held).
SETTLED_WIDTH = 1.005
#: Seconds a request may reach the server early against its turn (the jitter of the network and
#: the event loop): a bucket holding nothing to absorb it is paced this much slower a turn.
ARRIVAL_JITTER = 0.003
#: A reply slower than the fastest most likely reached the server late by as much (a loaded event
#: loop sends late), up to this share of a turn (more is more likely a slow reply); the next turn
#: of a bucket one request deep counts from then. Later than that, its process most likely paused
#: (a loaded machine: 50-100 ms), the gap the server saw is unknown, and the outcome tells nothing
#: of the rate (`Pacer._paused_about`). LATE_KEPT: answers whose lateness is kept.
LATE_SHARE = 0.25
LATE_KEPT = 64
#: Replies time their requests' arrivals only while the median of their delays past the fastest is
#: at most this (seconds): a steady server's replies strayed 0.4-1 ms on a loaded machine; a judge
#: whose own time to answer varies by tens of milliseconds makes every reply look late
#: (`lateness.ReplyLateness`).
REPLY_STEADY = 0.005
#: Few 429s to spare, the margin doubles with each refusal at the gap answered, up to MOST_WIDENED
#: times ARRIVAL_JITTER (a loaded machine's jitter), and eases back by MARGIN_EASING an answer.
MOST_WIDENED = 4.0
MARGIN_EASING = 0.99
#: The margin is this share of a turn at most (at 50 a second, ARRIVAL_JITTER would be 15% of the
#: limit).
MARGIN_SHARE = 0.02
#: With 429s to spare, the held pace starts this share above the gap answered (HOLD_EASING takes
#: about 25 answers a 1% back: at 10 a second, 2% cost the target).
HOLD_START = 0.01
#: Settled with 429s to spare, the pace is held where about 2% of requests arrive early enough to
#: be refused (a refusal there costs no time: the next request still goes a turn after the last
#: one taken) (HOLD_EASING / (HOLD_EASING + HOLD_BACKOFF)): each answer shortens the gap by
#: HOLD_EASING, each refusal lengthens it by HOLD_BACKOFF. The jitter of arrivals is then measured
#: by the refusals, not assumed, and a limit that falls or rises is followed.
HOLD_EASING = 0.0004
HOLD_BACKOFF = 0.02
#: Refusals in a row that tell a held pace the limit fell (fewer come together when a loaded
#: event loop sends a few requests late at once).
FELL_IN_A_ROW = 3
#: Seconds of answers (FELL_RECHECK_ANSWERS at least) after the limit fell at which the gap it fell
#: at is tried once more: a loaded machine's bunching the pacer could not tell from a fall reads
#: like one, and would leave the pace a step slower (26%) until the 429s to spare grew again, ten
#: seconds or more. A limit that fell refuses it: one 429 a fall.
FELL_RECHECK = 2.0
FELL_RECHECK_ANSWERS = 4

# -- once a rate is known -------------------------------------------------------------------------

#: How much faster than the server was seen to allow the senders go: enough to keep its bucket
#: empty (which shows its rate again), little enough that 429s stay near 1.5% of the calls.
PROBE = 0.015
#: Turns without a push-back before the rate rises by PROBE (each rise in a row twice the last, up
#: to MAX_RISE x PROBE: a pace far too slow catches up in seconds); at least MIN_PROBE_WAIT seconds
#: (at a low rate a sooner rise costs more 429s than it gains).
PROBE_TURNS = 20.0
MAX_RISE = 16
MIN_PROBE_WAIT = 0.5
#: A push-back with none in the last ISOLATED turns (a second at least) eases the rate off by
#: 2 x PROBE at most, whatever its bound: it came as the pace just passed the server's.
ISOLATED = 20.0
#: Push-backs in a row, to requests sent at the current rate, that make every sender wait (a quota,
#: not a bucket), and the rate after them as a share of the rate before.
STUCK = 8
DECREASE = 0.5
#: A new rate closer than this to the current one is not set (redrawing every turn costs).
RATE_TOLERANCE = 0.02
#: The slowest pace, requests a second.
MIN_RATE = 0.01

# -- the turns -------------------------------------------------------------------------------------

#: Waits for a turn shorter than this (seconds) are not cut short when the schedule is redrawn (a
#: task a turn costs at high rates, and a new rate hardly moves a short wait).
SHORT_WAIT = 0.1
#: The longest a request sent on a ticket may follow it (a turn relayed to a `--workers` process):
#: a send time reported later than that is not taken for it (another clock, or no relay).
RELAY_DELAY = 0.05

# -- the evidence (`evidence.RateEvidence`) ---------------------------------------------------------

#: Seconds of sends the evidence keeps: a server that lowers its limit is followed within it.
HORIZON = 10.0
#: The shortest span between two push-backs a bound is drawn from (shorter ones are all noise).
MIN_SPAN = 0.25
#: Earlier push-backs tried as the start of a span, spread over the horizon.
CANDIDATES = 8
#: Successes a bound from successes alone is drawn over at most.
SPACED = 16
#: The fastest round trip rises this share a second (a slowly rising minimum: a reply slower
#: than it most likely reached the server late; a loaded machine's round trips drift up). At 1% a
#: success (30% a second at 30/s) it soon forgot the fastest, took late arrivals for punctual ones,
#: and a strict gateway with headers refused 12-20%; per second, a slow pace still follows a drift.
FASTEST_RISE = 0.02
#: Successes a span must prove to count beside a longer one (so +-1 is at most 5% of it).
MIN_ACCEPTED = 20
#: Send times a `SendLog` keeps (at least).
SENDS_KEPT = 4096

# -- the headers ----------------------------------------------------------------------------------

#: The longest pause a header may impose (a daily budget's reset would otherwise stop a run for
#: hours on one reading; a 429 then comes with its own Retry-After).
MAX_PAUSE = 60.0
#: How much slower than its reset says a bucket one request deep is paced: it holds nothing to
#: absorb a request that arrives a little early.
ONE_DEEP_MARGIN = 0.01
