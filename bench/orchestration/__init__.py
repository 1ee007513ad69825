"""`python -m bench orchestration`: pages a second through the queue, the database and the
workers, with the engines replaced by counters."""
