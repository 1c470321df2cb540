"""Judge backends behind one small async protocol (`base.Judge`). `make_judge` picks one."""
