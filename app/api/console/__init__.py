"""The console: pages for people over the API's own services (templates rendered on the
server, a little script for live progress, no build step). Every page has its data twin: the
same path with `.json` answers the data the page shows, and every fact in it is in the API."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from app.api.console import job_routes, page_routes, session_routes, submit_routes
from app.api.console.render import HERE


def install_console(app: FastAPI) -> None:
    """The console's routes under /console, its script and styles under /console/static."""
    for module in (session_routes, job_routes, page_routes, submit_routes):
        app.include_router(module.router)
    app.mount("/console/static", StaticFiles(directory=HERE / "static"), name="console-static")
