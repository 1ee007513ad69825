"""Job callbacks: signed, retried for a day, every attempt stored, sent from a DB outbox."""
