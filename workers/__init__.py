"""Celery workers: the app factory and thin tasks over `app.distributed`."""
