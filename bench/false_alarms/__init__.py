"""What a false alarm costs and what a confirming attempt costs (issue 39): a stand-in
OpenAI-compatible server, the answers it writes, and `python -m bench false-alarms`."""
