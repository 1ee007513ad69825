// The console's one script: a job's live progress from the API's event stream (EventSource
// sends the sign-in cookie), and, when the job ends, the job's page read again in place.
"use strict";
(function () {
  const box = document.getElementById("progress");
  if (!box || box.dataset.ended === "true" || !window.EventSource) return;
  const bar = document.getElementById("progress-bar");
  const done = document.getElementById("pages-done");
  const total = document.getElementById("pages-total");
  const eta = document.getElementById("eta");
  const status = document.getElementById("job-status");
  const source = new EventSource(box.dataset.events);
  function show(data) {
    if (typeof data.finished === "number") { done.textContent = data.finished; bar.value = data.finished; }
    if (typeof data.total === "number") { total.textContent = data.total; bar.max = data.total || 1; }
    if (typeof data.eta_s === "number") { eta.textContent = data.eta_s > 0 ? ", about " + Math.ceil(data.eta_s) + " s left" : ""; }
  }
  async function refresh() {
    const answer = await fetch(window.location.href, { credentials: "same-origin" });
    const page = new DOMParser().parseFromString(await answer.text(), "text/html");
    const body = page.getElementById("job-body");
    if (body) document.getElementById("job-body").replaceWith(body);
    document.body.dataset.jobEnded = "true";
  }
  source.addEventListener("page.finished", function (e) {
    const data = JSON.parse(e.data);
    show(data);
    if (status && status.textContent === "pending") status.textContent = "running";
  });
  for (const kind of ["job.finished", "job.failed", "job.cancelled"]) {
    source.addEventListener(kind, function (e) { show(JSON.parse(e.data)); source.close(); refresh(); });
  }
})();
