// The backend page's traffic panel: the route's request and error rates as
// two SVG polylines, polled from /api/v1/traffic. Polling, not the feed:
// the rates change on every read of HAProxy's counters, and pushing them
// for every backend to every client would make the feed as large as the
// cluster; the endpoint answers from what dcm last read, never asking
// HAProxy.

const width = 300;
const height = 40;

export function followTraffic(panel, backend) {
  const rates = panel.querySelector('[data-role=rates]');
  const svg = panel.querySelector('[data-role=sparkline]');
  let every = 5;
  const poll = async () => {
    try {
      const r = await fetch(`/api/v1/traffic?backend=${encodeURIComponent(backend)}`, { headers: { Accept: 'application/json' } });
      if (r.ok) {
        const t = await r.json();
        every = Math.min(Math.max(t.every || 5, 1), 60);
        draw(svg, rates, t.backends[backend]);
      }
    } catch {
      // The next poll tries again; the panel keeps what it drew.
    }
    setTimeout(poll, every * 1000);
  };
  poll();
}

function draw(svg, rates, series) {
  const req = series ? series.requests : [];
  const err = series ? series.errors : [];
  svg.dataset.samples = String(req.length);
  if (req.length === 0) {
    rates.textContent = 'No traffic read yet.';
    return;
  }
  // One scale for both lines, so errors read as a share of requests.
  const top = Math.max(1, ...req, ...err);
  svg.querySelector('[data-role=requests]').setAttribute('points', points(req, top));
  svg.querySelector('[data-role=errors]').setAttribute('points', points(err, top));
  const last = (a) => (a.length ? a[a.length - 1] : 0);
  rates.textContent = `${fmt(last(req))} requests/s, ${fmt(last(err))} errors/s (peak ${fmt(top)}/s over ${req.length} samples)`;
}

function points(values, top) {
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values.map((v, i) => `${(i * step).toFixed(1)},${(height - (v / top) * (height - 2) - 1).toFixed(1)}`).join(' ');
}

function fmt(v) {
  return v >= 10 ? v.toFixed(0) : v.toFixed(1);
}
