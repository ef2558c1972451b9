(function () {
  var config = {displaylogo: false, responsive: true};
  var figs = Array.prototype.map.call(document.querySelectorAll('script.fig-data'), function (s) {
    return {el: document.getElementById(s.getAttribute('data-for')), src: s, done: false};
  });
  function draw(f) {
    if (f.done) return;
    f.done = true;
    var fig = JSON.parse(f.src.textContent);
    Plotly.newPlot(f.el, fig.data, fig.layout, config);
  }
  var idle = window.requestIdleCallback || function (cb) { return setTimeout(cb, 1); };
  function next() {
    for (var i = 0; i < figs.length; i++) {
      if (!figs[i].done) { draw(figs[i]); idle(next); return; }
    }
  }
  if ('IntersectionObserver' in window) {
    var seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) return;
        seen.unobserve(e.target);
        figs.forEach(function (f) { if (f.el === e.target) draw(f); });
      });
    }, {rootMargin: '400px'});
    figs.forEach(function (f) { seen.observe(f.el); });
  }
  window.addEventListener('load', function () { idle(next); });
})();
