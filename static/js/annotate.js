/* Keyboard-first annotation (progressive: every action is also a plain form button).
 *
 * 1-9 choose · s skip (optional reason, Enter confirms, Esc cancels) · u undo · o original.
 * One press is one action: a held key's auto-repeat is ignored.
 * Active time per item: the clock runs while the tab is visible and pauses when it is hidden;
 * the total goes out with the answer as duration_ms.
 *
 * History: every item shown gets its own URL (?a=<assignment id>, the stage's data-url); an
 * answer pushes a new history entry, anything else replaces the current one. Back / Forward
 * loads that URL from the server, which shows an item already answered as answered (with the
 * answer and Undo) instead of a stale copy of the page (issue 20.11).
 */
(function () {
  "use strict";
  var activeMs = 0, since = null, busy = false, lastAction = "";

  function syncHistory() {
    var stage = document.getElementById("stage");
    var url = stage && stage.dataset.url;
    var action = lastAction;
    lastAction = "";
    if (!url || url === location.pathname + location.search) { return; }
    if (action === "answer-form") { history.pushState({ annotate: true }, "", url); }
    else { history.replaceState({ annotate: true }, "", url); }
  }
  // Same-document Back / Forward between items, and a page restored from the back-forward
  // cache: ask the server for the current state of that item.
  window.addEventListener("popstate", function () { location.reload(); });
  window.addEventListener("pageshow", function (e) { if (e.persisted) { location.reload(); } });

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

  // An image that the browser cannot show (the file is there but broken, a network error, a
  // server that refuses it) was a broken-image icon and a generic alt text, with nothing to
  // say what to do: the annotator guessed from the captions. Say so in its place, as for a file
  // missing on the server, and fill in the skip reason the researchers see.
  var IMAGE_FAILED = "image did not load";
  function imageFailed(img) {
    var figure = img.closest("figure");
    if (!figure || figure.querySelector(".image-failed")) { return; }
    img.hidden = true;
    figure.classList.add("image-missing");
    var note = document.createElement("p");
    note.className = "image-failed";
    note.setAttribute("role", "alert");
    note.setAttribute("data-testid", "image-failed");
    var strong = document.createElement("strong");
    strong.textContent = "The image did not load in your browser";
    note.appendChild(strong);
    note.appendChild(document.createTextNode(
      ": do not guess from the captions. Reload the page to try again, or skip the item (press s) " +
      "with the reason \u201c" + IMAGE_FAILED + "\u201d, which the project's researchers see."));
    figure.appendChild(note);
    var reason = document.getElementById("skip-reason");
    if (reason && !reason.value) { reason.value = IMAGE_FAILED; }
  }
  function watchImages() {
    var imgs = document.querySelectorAll("#stage .item-image img");
    Array.prototype.forEach.call(imgs, function (img) {
      // the error may have come before this script ran (a deferred script, a swapped stage)
      if (img.complete && img.naturalWidth === 0) { imageFailed(img); return; }
      img.addEventListener("error", function () { imageFailed(img); });
    });
  }

  function prepare() {
    startClock();
    watchImages();
    syncHistory();
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
    if (stageAction(elt)) {
      busy = true;
      lastAction = elt.id || "undo";
    }
  });
  document.addEventListener("htmx:load", function (evt) {
    if (evt.detail.elt && evt.detail.elt.id === "stage") { prepare(); }
  });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });

  // An answer, skip or undo that did not get through said nothing: the key press seemed lost.
  // Say so on the stage (a new stage, once one comes, replaces the note).
  function notSent(evt, text) {
    if (!stageAction(evt.detail.elt)) { return; }
    var stage = document.getElementById("stage");
    if (!stage) { return; }
    var note = document.getElementById("not-sent");
    if (!note) {
      note = document.createElement("p");
      note.id = "not-sent";
      note.className = "error";
      note.setAttribute("role", "alert");
      stage.insertBefore(note, stage.firstChild);
    }
    note.textContent = text;
  }
  function stageAction(elt) {
    return !!elt && (elt.id === "answer-form" || elt.id === "skip-form" || elt.classList.contains("undo-bar"));
  }
  // A server error (500, 503) to an answer, skip or undo was swapped over the whole stage: the
  // item and its keys were gone. The item stays; the note above says it was not saved.
  document.addEventListener("htmx:beforeSwap", function (evt) {
    var status = evt.detail.xhr ? evt.detail.xhr.status : 0;
    if (status >= 500 && stageAction(evt.detail.requestConfig && evt.detail.requestConfig.elt)) {
      evt.detail.shouldSwap = false;
    }
  });
  document.addEventListener("htmx:responseError", function (evt) {
    busy = false;
    var status = evt.detail.xhr ? evt.detail.xhr.status : 0;
    if (status >= 500) {
      notSent(evt, "NOT saved: the server failed (HTTP " + status + "). Press again to retry " +
        "(an answer that did get through is kept once, not twice), or reload the page.");
      return;
    }
    notSent(evt, "The server could not take this (HTTP " + status + "). Reload the page to see where you are.");
  });
  document.addEventListener("htmx:sendError", function (evt) {
    busy = false;
    notSent(evt, "Not sent: the server could not be reached. Press again when you are back online " +
      "(an answer that did get through is kept once, not twice).");
  });

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
    // A held key repeats: one press is one action, never a second answer on the next item.
    if (e.repeat) { e.preventDefault(); return; }
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
