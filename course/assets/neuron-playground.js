// The neuron playground of lesson 5: sliders for x1, x2, w1, w2 and b, and the neuron's graph with
// every node's data and grad, recomputed in the browser on every move. No server, no library.
//
// The page holds `<div class="bp-neuron" data-x1=... data-x2=... data-w1=... data-w2=... data-b=...>`,
// written at build time from the reference neuron; this script fills it in.
(function () {
  "use strict";

  // ---- a tiny Value engine, with the same rules as solutions/engine.py ----
  class Value {
    constructor(data, children = [], op = "", label = "") {
      this.data = data;
      this.grad = 0;
      this._prev = children;
      this._op = op;
      this.label = label;
      this._backward = () => {};
    }

    add(other) {
      const out = new Value(this.data + other.data, [this, other], "+");
      out._backward = () => {
        this.grad += out.grad; // d(out)/d(self) = 1
        other.grad += out.grad; // d(out)/d(other) = 1
      };
      return out;
    }

    mul(other) {
      const out = new Value(this.data * other.data, [this, other], "*");
      out._backward = () => {
        this.grad += other.data * out.grad; // d(out)/d(self) = other
        other.grad += this.data * out.grad; // d(out)/d(other) = self
      };
      return out;
    }

    tanh() {
      const t = Math.tanh(this.data);
      const out = new Value(t, [this], "tanh");
      out._backward = () => {
        this.grad += (1 - t * t) * out.grad; // d tanh(n)/dn = 1 - tanh(n)²
      };
      return out;
    }

    backward() {
      // topological order with an explicit stack (lesson 6), then the reverse sweep
      const topo = [];
      const visited = new Set();
      const stack = [[this, false]];
      while (stack.length) {
        const [v, childrenDone] = stack.pop();
        if (childrenDone) {
          topo.push(v);
        } else if (!visited.has(v)) {
          visited.add(v);
          stack.push([v, true]);
          for (const child of v._prev) stack.push([child, false]);
        }
      }
      this.grad = 1;
      for (let i = topo.length - 1; i >= 0; i--) topo[i]._backward();
    }
  }

  // The neuron of the page: o = tanh(x1·w1 + x2·w2 + b), built in the same order as the Python code.
  function neuron(p) {
    const x1 = new Value(p.x1, [], "", "x1");
    const x2 = new Value(p.x2, [], "", "x2");
    const w1 = new Value(p.w1, [], "", "w1");
    const w2 = new Value(p.w2, [], "", "w2");
    const b = new Value(p.b, [], "", "b");
    const x1w1 = x1.mul(w1); x1w1.label = "x1*w1";
    const x2w2 = x2.mul(w2); x2w2.label = "x2*w2";
    const sum = x1w1.add(x2w2); sum.label = "x1*w1 + x2*w2";
    const n = sum.add(b); n.label = "n";
    const o = n.tanh(); o.label = "o";
    o.backward();
    return { x1, w1, x2, w2, "x1*w1": x1w1, "x2*w2": x2w2, "x1*w1 + x2*w2": sum, b, n, o };
  }

  // ---- the picture: fixed positions, left to right as draw_dot lays it out, or top to bottom on a phone ----
  const SVG = "http://www.w3.org/2000/svg";
  const R = 13, GAP = 12; // op circle radius (an op of several letters gets an ellipse), op-to-record gap
  const OPS = { "x1*w1": "*", "x2*w2": "*", "x1*w1 + x2*w2": "+", n: "+", o: "tanh" };
  const EDGES = [ // child -> parent (into the parent's op node)
    ["x1", "x1*w1"], ["w1", "x1*w1"], ["x2", "x2*w2"], ["w2", "x2*w2"],
    ["x1*w1", "x1*w1 + x2*w2"], ["x2*w2", "x1*w1 + x2*w2"], ["x1*w1 + x2*w2", "n"], ["b", "n"], ["n", "o"],
  ];
  // each record's width and height, the top-left corner of each node's record (and its own width, if it has
  // one); `stacked`: a record's values under their keys (data, grad), which makes it narrow
  const LAYOUTS = {
    wide: { across: true, rw: 112, rh: 60, at: {
      x1: [0, 0], w1: [0, 70], x2: [0, 160], w2: [0, 230], "x1*w1": [184, 35], "x2*w2": [184, 195],
      "x1*w1 + x2*w2": [368, 115], b: [368, 250], n: [552, 183], o: [736, 183],
    } },
    // 850 px of the wide picture would shrink its text below 9 px in a phone's column: four records across,
    // each narrow, keep it at 0.85 of its size or more
    tall: { across: false, stacked: true, rw: 88, rh: 86, at: {
      x1: [0, 0], w1: [96, 0], x2: [192, 0], w2: [288, 0], "x1*w1": [48, 140], "x2*w2": [240, 140],
      "x1*w1 + x2*w2": [132, 280, 112], b: [288, 280], n: [216, 420], o: [216, 560],
    } },
  };
  const NARROW = 600; // below this column width (px) the tall picture is the more legible one

  function size(layout) {
    const corners = Object.values(layout.at);
    const right = Math.max(...corners.map(([x, , w]) => x + (w || layout.rw)));
    return [right + 2, Math.max(...corners.map(([, y]) => y)) + layout.rh + 2];
  }

  function el(name, attrs = {}, text = null) {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== null) e.textContent = text;
    return e;
  }

  function fmt(x) {
    const s = x.toFixed(4);
    return s === "-0.0000" ? "0.0000" : s;
  }

  function sign(x) {
    return Math.abs(x) < 5e-5 ? "zero" : x > 0 ? "pos" : "neg";
  }

  // Where a node's record and op sit, and where arrows leave and enter it.
  function place(layout, name) {
    const [x, y, own] = layout.at[name];
    const op = OPS[name] || "", RW = own || layout.rw, RH = layout.rh;
    const rx = op.length > 1 ? 21 : R; // "tanh" in an ellipse
    if (layout.across) {
      const cy = y + RH / 2, cx = x - GAP - rx;
      return { x, y, op, cx, cy, rx, rw: RW, out: [x + RW, cy], into: [cx - rx, cy], opOut: [cx + rx, cy], recordIn: [x, cy] };
    }
    const cx = x + RW / 2, cy = y - GAP - R;
    return { x, y, op, cx, cy, rx, rw: RW, out: [cx, y + RH], into: [cx, cy - R], opOut: [cx, cy + R], recordIn: [cx, y] };
  }

  function curve([x0, y0], [x1, y1], across) {
    if (across) {
      const mid = (x0 + x1) / 2;
      return `M ${x0} ${y0} C ${mid} ${y0}, ${mid} ${y1}, ${x1} ${y1}`;
    }
    const mid = (y0 + y1) / 2;
    return `M ${x0} ${y0} C ${x0} ${mid}, ${x1} ${mid}, ${x1} ${y1}`;
  }

  function drawGraph(layout, markerId) {
    const [width, height] = size(layout);
    const svg = el("svg", {
      viewBox: `-1 -1 ${width} ${height}`, class: "bp-neuron-graph", role: "img",
      "aria-label": "The neuron's computation graph with the data and grad of every node",
    });
    svg.style.maxWidth = `${width}px`;
    const defs = el("defs");
    const marker = el("marker", { id: markerId, viewBox: "0 0 10 10", refX: "10", refY: "5",
      markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.appendChild(el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "bp-neuron-arrow" }));
    defs.appendChild(marker);
    svg.appendChild(defs);

    const where = {};
    for (const name of Object.keys(layout.at)) where[name] = place(layout, name);
    const edges = el("g", { class: "bp-neuron-edges" });
    svg.appendChild(edges);
    const arrow = { "marker-end": `url(#${markerId})` };
    for (const [child, parent] of EDGES) {
      edges.appendChild(el("path", { d: curve(where[child].out, where[parent].into, layout.across), ...arrow }));
    }
    const refs = {};
    for (const [name, w] of Object.entries(where)) {
      const g = el("g", { class: "bp-neuron-node", "data-node": name });
      if (w.op) {
        edges.appendChild(el("path", { d: `M ${w.opOut.join(" ")} L ${w.recordIn.join(" ")}`, ...arrow }));
        g.appendChild(el("ellipse", { cx: w.cx, cy: w.cy, rx: w.rx, ry: R, class: "bp-neuron-op" }));
        g.appendChild(el("text", { x: w.cx, y: w.cy, class: "bp-neuron-optext" }, w.op));
      }
      const RW = w.rw;
      g.appendChild(el("rect", { x: w.x, y: w.y, width: RW, height: layout.rh, rx: 4, class: "bp-neuron-record" }));
      g.appendChild(el("line", { x1: w.x, y1: w.y + 20, x2: w.x + RW, y2: w.y + 20, class: "bp-neuron-rule" }));
      g.appendChild(el("text", { x: w.x + RW / 2, y: w.y + 10, class: "bp-neuron-label" }, name));
      // a field: its key, then its value on the same line, or stacked (the value under it, to the right)
      const field = (key, top, className) => {
        const value = el("tspan", { class: className });
        if (layout.stacked) {
          g.appendChild(el("text", { x: w.x + 6, y: w.y + top, class: "bp-neuron-field bp-neuron-key" }, key));
          const text = el("text", { x: w.x + RW - 6, y: w.y + top + 15, class: "bp-neuron-field bp-neuron-right" });
          text.appendChild(value);
          g.appendChild(text);
        } else {
          const text = el("text", { x: w.x + 6, y: w.y + top, class: "bp-neuron-field" });
          text.append(el("tspan", { class: "bp-neuron-key" }, `${key} `), value);
          g.appendChild(text);
        }
        return value;
      };
      const [dataAt, gradAt] = layout.stacked ? [30, 61] : [32, 50];
      refs[name] = { data: field("data", dataAt, "bp-np-data"), grad: field("grad", gradAt, "bp-np-grad") };
      svg.appendChild(g);
    }
    return { svg, refs };
  }

  const INPUTS = [ // name, slider range
    ["x1", -4, 4], ["w1", -4, 4], ["x2", -4, 4], ["w2", -4, 4], ["b", -8, 8],
  ];
  // the nodes whose grads a screen reader names, in this order: the leaves, then from the products to n
  const SPOKEN = ["x1", "w1", "x2", "w2", "b", "x1*w1", "x2*w2", "x1*w1 + x2*w2", "n"];
  const SPEAK_AFTER = 600; // ms of rest before the live region speaks
  let count = 0;

  function build(root) {
    if (root.dataset.bpReady) return;
    root.dataset.bpReady = "1";
    const start = {};
    for (const [name] of INPUTS) start[name] = Number(root.dataset[name]);
    const state = { ...start };

    root.textContent = "";
    const controls = document.createElement("div");
    controls.className = "bp-neuron-controls";
    const sliders = {};
    const shown = {};
    for (const [name, min, max] of INPUTS) {
      const label = document.createElement("label");
      label.className = "bp-neuron-slider";
      const title = document.createElement("span");
      title.className = "bp-neuron-name";
      title.textContent = name;
      const input = document.createElement("input");
      Object.assign(input, { type: "range", min, max, step: "0.01", name });
      input.setAttribute("aria-label", `${name}, from ${min} to ${max}`);
      input.value = String(start[name]); // the exact start stays in `state` until the slider moves
      const value = document.createElement("output");
      value.className = "bp-neuron-value";
      label.append(title, input, value);
      controls.appendChild(label);
      input.addEventListener("input", () => {
        state[name] = Number(input.value);
        update(true);
      });
      sliders[name] = input;
      shown[name] = value;
    }
    const reset = document.createElement("button");
    reset.type = "button";
    reset.className = "md-button bp-neuron-reset";
    reset.textContent = "Reset";
    reset.addEventListener("click", () => {
      Object.assign(state, start);
      for (const [name] of INPUTS) sliders[name].value = String(start[name]);
      update(true);
    });
    controls.appendChild(reset);

    const figure = document.createElement("div");
    figure.className = "bp-neuron-figure";
    const markerId = `bp-neuron-arrow-${++count}`;
    let refs = {}, shape = "";
    // the picture follows the column's width: a phone turned sideways gets the wide one back
    function draw() {
      const want = root.clientWidth && root.clientWidth < NARROW ? "tall" : "wide";
      if (want === shape) return false;
      shape = want;
      const drawn = drawGraph(LAYOUTS[want], markerId);
      figure.replaceChildren(drawn.svg);
      refs = drawn.refs;
      return true;
    }
    const summary = document.createElement("p");
    summary.className = "bp-neuron-summary";
    // What a screen reader says once the sliders rest: o, its slope and every node's grad, each thing to try's
    // answer (the graph itself is a picture). Said after a pause, not on every step of a slider.
    const spoken = document.createElement("p");
    spoken.className = "bp-neuron-spoken";
    spoken.setAttribute("aria-live", "polite");
    spoken.setAttribute("aria-atomic", "true");
    let speaking = 0;
    root.append(controls, figure, summary, spoken);

    function update(moved = false) {
      const nodes = neuron(state);
      for (const [name, ref] of Object.entries(refs)) {
        ref.data.textContent = fmt(nodes[name].data);
        ref.grad.textContent = fmt(nodes[name].grad);
        ref.grad.setAttribute("data-sign", sign(nodes[name].grad));
      }
      for (const [name] of INPUTS) shown[name].textContent = fmt(state[name]);
      const o = nodes.o.data;
      summary.textContent = `n = ${fmt(nodes.n.data)}, o = tanh(n) = ${fmt(o)}, do/dn = 1 − o² = ${fmt(1 - o * o)}`;
      if (!moved) return; // a new layout, or the page's first drawing: nothing to announce
      clearTimeout(speaking);
      speaking = setTimeout(() => {
        spoken.textContent = `o = ${fmt(o)}, do/dn = ${fmt(1 - o * o)}; grads: `
          + SPOKEN.map((name) => `${name} ${fmt(nodes[name].grad)}`).join(", ");
      }, SPEAK_AFTER);
    }
    draw();
    update();
    if (window.ResizeObserver) new ResizeObserver(() => draw() && update()).observe(root);
  }

  function wire() {
    document.querySelectorAll(".bp-neuron[data-x1]").forEach(build);
  }

  // Material's instant navigation (if enabled) swaps pages without a reload: document$ announces each page.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(wire);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wire);
  } else {
    wire();
  }
})();
