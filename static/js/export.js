// The export form: the "No state chosen" help is shown only while no state is selected.
// (No inline script: the CSP forbids it. Without JavaScript the server renders it the same way.)
(function () {
  "use strict";
  var select = document.getElementById("x-state");
  var help = document.getElementById("x-state-help");
  if (!select || !help) return;
  function update() {
    help.hidden = select.selectedOptions.length > 0;
  }
  select.addEventListener("change", update);
  update();
})();
