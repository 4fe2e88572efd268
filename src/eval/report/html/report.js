// Opens the transcript a link points at, filters the cases table and the
// transcripts (also from the address: ?failed=1&case=SUITE/CASE&model=M).
// Builds no HTML from text: everything shown is already in the page, escaped.
(function () {
  "use strict";
  var failed = document.getElementById("f-failed");
  var caseSel = document.getElementById("f-case");
  var modelSel = document.getElementById("f-model");
  var form = document.getElementById("transcript-filters");
  function filterTranscripts() {
    var shown = 0;
    var blocks = document.querySelectorAll("details.transcript");
    for (var i = 0; i < blocks.length; i++) {
      var b = blocks[i];
      var keep = (!failed || !failed.checked || b.getAttribute("data-outcome") !== "passed") &&
        (!caseSel || caseSel.value === "" || b.getAttribute("data-case") === caseSel.value) &&
        (!modelSel || modelSel.value === "" || b.getAttribute("data-model") === modelSel.value);
      b.hidden = !keep;
      if (keep) { shown++; }
    }
    var none = document.getElementById("f-none");
    if (none) { none.hidden = shown > 0; }
  }
  function choose(select, value) {
    if (!select || value === null) { return; }
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value === value) { select.selectedIndex = i; }
    }
  }
  function fromAddress() {
    var query = new URLSearchParams(location.search);
    if (failed && query.get("failed") === "1") { failed.checked = true; }
    choose(caseSel, query.get("case"));
    choose(modelSel, query.get("model"));
  }
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) { return; }
    var target = document.getElementById(id);
    if (target && target.tagName === "DETAILS") {
      // A link must show what it points at, whatever the filters hide.
      if (target.hidden && form) { form.reset(); filterTranscripts(); }
      target.open = true;
      target.scrollIntoView();
    }
  }
  [failed, caseSel, modelSel].forEach(function (control) {
    if (control) { control.addEventListener("change", filterTranscripts); }
  });
  if (form) {
    form.addEventListener("reset", function () { setTimeout(filterTranscripts, 0); });
    form.addEventListener("submit", function (e) { e.preventDefault(); });
  }
  fromAddress();
  filterTranscripts();
  window.addEventListener("hashchange", openTarget);
  // Following the same link again (no hash change) opens it again too.
  document.addEventListener("click", function (e) {
    var link = e.target.closest && e.target.closest('a[href^="#t-"]');
    if (link) { setTimeout(openTarget, 0); }
  });
  openTarget();
  var radios = document.querySelectorAll('input[name="show"]');
  function filter() {
    var show = document.querySelector('input[name="show"]:checked').value;
    var rows = document.querySelectorAll("tr.case");
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var keep = show === "all" ||
        (show === "notpassed" && !row.classList.contains("ok")) ||
        (show === "flaky" && row.classList.contains("flaky"));
      row.hidden = !keep;
    }
  }
  for (var i = 0; i < radios.length; i++) {
    radios[i].addEventListener("change", filter);
  }
  document.body.setAttribute("data-report-ready", "yes");
})();
