// The import form: the fields and help of the chosen format only (the three CAD NLI files for
// cad-nli; "required" on the split for the CAD layouts). No inline script: the CSP forbids it.
// Without JavaScript every field is shown and the server checks the same rules.
(function () {
  "use strict";
  var select = document.getElementById("id_format");
  var form = document.getElementById("import-form");
  if (!select || !form) return;
  function update() {
    var fmt = select.value;
    var cad = fmt.indexOf("cad-") === 0;
    form.querySelectorAll("[data-help]").forEach(function (el) {
      var want = el.getAttribute("data-help");
      el.hidden = !(want === fmt || (want === "cad" && cad) || (want === "optional" && !cad));
    });
    form.querySelectorAll("fieldset[data-for]").forEach(function (el) {
      el.hidden = el.getAttribute("data-for") !== fmt;
      el.disabled = el.hidden;
    });
    document.getElementById("id_split").required = cad;
  }
  select.addEventListener("change", update);
  update();
})();
