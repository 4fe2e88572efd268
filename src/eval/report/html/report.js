// Opens the transcript a link points at, and filters the cases table.
// Builds no HTML from text: everything shown is already in the page, escaped.
(function () {
  "use strict";
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) { return; }
    var target = document.getElementById(id);
    if (target && target.tagName === "DETAILS") {
      target.open = true;
      target.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", openTarget);
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
