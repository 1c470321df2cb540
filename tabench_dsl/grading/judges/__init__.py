"""Judge backends behind one base class (`base.Judge`, its optional capabilities declared there),
one module per backend, each registering itself by kind in `registry`; `factory.make_judge` picks
one. The HTTP backends share `_http.HttpJudge`; `urls` holds where keys may go."""
