"""`python -m bench stops`: the loop stop in the engine and at GPU rates (`bench/stop_rates`)."""
