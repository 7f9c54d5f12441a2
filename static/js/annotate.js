/* Keyboard-first annotation (progressive: every action is also a plain form button).
 *
 * 1-9 choose · s skip (optional reason, Enter confirms, Esc cancels) · u undo · o original.
 * Active time per item: the clock runs while the tab is visible and pauses when it is hidden;
 * the total goes out with the answer as duration_ms.
 */
(function () {
  "use strict";
  var activeMs = 0, since = null, busy = false;

  function startClock() { activeMs = 0; since = document.hidden ? null : performance.now(); busy = false; }
  function elapsed() { return Math.round(activeMs + (since === null ? 0 : performance.now() - since)); }
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) { if (since !== null) { activeMs += performance.now() - since; since = null; } }
    else if (since === null) { since = performance.now(); }
  });

  function focusStage() {
    var h = document.getElementById("item-heading");
    if (h) { h.focus({ preventScroll: true }); }
  }

  function prepare() {
    startClock();
    var stage = document.getElementById("stage");
    if (stage) { stage.dataset.ready = "1"; }
    var form = document.getElementById("answer-form");
    if (form) {
      form.addEventListener("submit", function () {
        var d = form.querySelector("input[name=duration_ms]");
        if (d) { d.value = String(elapsed()); }
      });
    }
    focusStage();
  }

  // htmx: fill duration_ms just before the answer is sent; lock against double presses.
  document.addEventListener("htmx:configRequest", function (evt) {
    var elt = evt.detail.elt;
    if (elt && elt.id === "answer-form") { evt.detail.parameters["duration_ms"] = String(elapsed()); }
  });
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var elt = evt.detail.elt;
    if (elt && (elt.id === "answer-form" || elt.id === "skip-form" || elt.classList.contains("undo-bar"))) { busy = true; }
  });
  document.addEventListener("htmx:load", function (evt) {
    if (evt.detail.elt && evt.detail.elt.id === "stage") { prepare(); }
  });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });
  document.addEventListener("htmx:responseError", function () { busy = false; });
  document.addEventListener("htmx:sendError", function () { busy = false; });

  function typing(target) {
    var tag = (target && target.tagName) || "";
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    var skipDetails = document.getElementById("skip-details");
    if (typing(e.target)) {
      if (e.key === "Escape" && skipDetails) { skipDetails.open = false; focusStage(); e.preventDefault(); }
      return; // Enter in the reason field submits the skip form natively (htmx intercepts it)
    }
    if (busy) { return; }
    if (/^[1-9]$/.test(e.key)) {
      var btn = document.querySelector('#answer-form button[data-key="' + e.key + '"]');
      if (btn) { e.preventDefault(); btn.classList.add("pressed"); btn.click(); }
      return;
    }
    var key = e.key.toLowerCase();
    if (key === "s" && skipDetails) {
      e.preventDefault();
      skipDetails.open = true;
      var reason = document.getElementById("skip-reason");
      if (reason) { reason.focus(); }
    } else if (key === "u") {
      var undo = document.getElementById("undo");
      if (undo) { e.preventDefault(); undo.click(); }
    } else if (key === "o") {
      var orig = document.getElementById("original");
      if (orig) { e.preventDefault(); orig.open = !orig.open; }
    }
  });

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", prepare); } else { prepare(); }
})();
