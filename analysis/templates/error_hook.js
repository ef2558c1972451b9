(function () {
  var pending = [];
  function put(msg) {
    var el = document.getElementById('report-errors');
    if (!el) { pending.push(msg); return; }
    var li = document.createElement('li'); li.textContent = String(msg); el.appendChild(li);
  }
  window.onerror = function (m, src, line, col) { put('error: ' + m + ' at ' + src + ':' + line + ':' + col); };
  window.addEventListener('unhandledrejection', function (e) { put('unhandled rejection: ' + (e.reason && e.reason.message || e.reason)); });
  var orig = console.error;
  console.error = function () { put('console.error: ' + Array.prototype.join.call(arguments, ' ')); return orig.apply(console, arguments); };
  document.addEventListener('DOMContentLoaded', function () { pending.splice(0).forEach(put); });
})();
