"""Live progress of a job: the events a client streams or waits on, read from the database."""
