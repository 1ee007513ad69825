"""The loop detector's benchmark (`python -m bench detector`, `detector-healthy`): recall,
onset and false alarms on real and scripted outputs, held out by source."""
