"""The retry policy: choosing a page's next attempt from its plan and history (`plan.py`), pure."""
