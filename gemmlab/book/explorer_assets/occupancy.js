/* The Occupancy Calculator. gemmlab/occupancy_explorer.py renders the device presets and the rule
   constants; calculate() below applies the rules of gemmlab.occupancy.calculate, and the browser tests
   compare the two over a grid of cases. No network, no libraries. */
(function () {
  "use strict";
  if (window.OccupancyCalculator) return;
  var SVG = "http://www.w3.org/2000/svg";

  function ceilDiv(a, b) { return Math.floor((a + b - 1) / b); }
  function fmt(n) { return Math.round(n).toLocaleString("en-US"); }

  function calculate(spec, rules, threads, registers, shared) {
    if (!(threads >= 1 && threads <= spec.max_threads_per_block))
      return {error: "A block has 1 to " + fmt(spec.max_threads_per_block) + " threads."};
    if (!(registers >= 0 && registers <= rules.max_registers))
      return {error: "A thread has 0 to " + rules.max_registers + " registers."};
    if (!(shared >= 0 && shared <= spec.shared_per_block_optin))
      return {error: "A block may have 0 to " + fmt(spec.shared_per_block_optin) + " bytes of shared memory on this GPU."};
    var warpsPerBlock = ceilDiv(threads, spec.warp_size);
    var maxWarps = Math.floor(spec.max_threads_per_sm / spec.warp_size);
    var regsPerWarp = ceilDiv(Math.max(registers, 1) * spec.warp_size, rules.register_unit) * rules.register_unit;
    // The hardware checks a block's registers as if its warps were spread over all sub-partitions.
    if (regsPerWarp * ceilDiv(warpsPerBlock, rules.sub_partitions) * rules.sub_partitions > spec.registers_per_block)
      return {error: fmt(threads) + " threads × " + registers + " registers exceed the " +
              fmt(spec.registers_per_block) + " registers a block may use."};
    var warpsByRegisters = Math.floor(spec.registers_per_sm / rules.sub_partitions / regsPerWarp) * rules.sub_partitions;
    var smem = ceilDiv(shared + spec.reserved_shared_per_block, rules.shared_unit) * rules.shared_unit;
    var limits = [["threads", Math.floor(maxWarps / warpsPerBlock)], ["blocks", spec.max_blocks_per_sm],
                  ["registers", Math.floor(warpsByRegisters / warpsPerBlock)]];
    if (smem) limits.push(["shared memory", Math.floor(spec.shared_per_sm / smem)]);
    var blocks = Math.min.apply(null, limits.map(function (l) { return l[1]; }));
    return {blocks: blocks, warps: blocks * warpsPerBlock, maxWarps: maxWarps,
            occupancy: blocks * warpsPerBlock / maxWarps, limits: limits,
            binding: limits.filter(function (l) { return l[1] === blocks; }).map(function (l) { return l[0]; })};
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svgEl(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }

  // One input: a number field (exact values) and a slider (quick moves), kept in step.
  function control(box, key, label, unit) {
    var row = el("div", {"class": "occx-control"});
    var id = box.id + "-" + key;
    row.appendChild(el("label", {"for": id}, label));
    var num = el("input", {type: "number", id: id, "data-occx": key, inputmode: "numeric"});
    var range = el("input", {type: "range", "aria-label": label + " (slider)", tabindex: "-1"});
    row.appendChild(num);
    row.appendChild(el("span", {"class": "occx-unit"}, unit));
    row.appendChild(range);
    return {row: row, num: num, range: range};
  }

  function chart(title, xLabel) {
    var fig = el("figure", {"class": "occx-chart"});
    var svg = svgEl("svg", {viewBox: "0 0 320 170", role: "img", "aria-label": title});
    fig.appendChild(svg);
    fig.appendChild(el("figcaption", {}, title));
    return {fig: fig, svg: svg, xLabel: xLabel};
  }

  // Occupancy (%) against one input, the others fixed: a step line, the current value as a dot.
  function drawChart(c, xs, ys, current, fmtX) {
    var svg = c.svg, L = 44, R = 310, T = 10, B = 130;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var x0 = xs[0], x1 = xs[xs.length - 1];
    function X(x) { return L + (R - L) * (x - x0) / Math.max(x1 - x0, 1); }
    function Y(y) { return B - (B - T) * y; }
    [0, 0.5, 1].forEach(function (g) {
      svg.appendChild(svgEl("line", {x1: L, x2: R, y1: Y(g), y2: Y(g), "class": "occx-grid"}));
      var t = svgEl("text", {x: L - 6, y: Y(g) + 4, "text-anchor": "end", "class": "occx-tick"});
      t.textContent = (100 * g) + "%";
      svg.appendChild(t);
    });
    var d = "", prev = null;
    xs.forEach(function (x, i) {
      var y = ys[i];
      if (y === null) { prev = null; return; }          // no block fits here: a gap in the line
      d += prev === null ? "M" + X(x).toFixed(1) + "," + Y(y).toFixed(1)
                         : "H" + X(x).toFixed(1) + "V" + Y(y).toFixed(1);
      prev = y;
    });
    svg.appendChild(svgEl("path", {d: d, "class": "occx-line"}));
    if (current.y !== null) svg.appendChild(svgEl("circle", {cx: X(current.x), cy: Y(current.y), r: 5, "class": "occx-dot"}));
    [[x0, "start"], [x1, "end"]].forEach(function (p) {
      var t = svgEl("text", {x: X(p[0]), y: B + 16, "text-anchor": p[1], "class": "occx-tick"});
      t.textContent = fmtX(p[0]);
      svg.appendChild(t);
    });
    var lab = svgEl("text", {x: (L + R) / 2, y: B + 34, "text-anchor": "middle", "class": "occx-label"});
    lab.textContent = c.xLabel;
    svg.appendChild(lab);
  }

  function mount(box, data) {
    if (!box || box.getAttribute("data-mounted")) return;
    box.setAttribute("data-mounted", "1");
    box.textContent = "";
    var rules = data.rules, presets = data.presets;
    var form = el("div", {"class": "occx-controls"});
    var devRow = el("div", {"class": "occx-control"});
    devRow.appendChild(el("label", {"for": box.id + "-device"}, "Device"));
    var select = el("select", {id: box.id + "-device", "data-occx": "device"});
    presets.forEach(function (p, i) {
      select.appendChild(el("option", {value: String(i)}, p.name + " (compute capability " + p.cc + ")"));
    });
    devRow.appendChild(select);
    form.appendChild(devRow);
    var threads = control(box, "threads", "Threads per block", "");
    var regs = control(box, "registers", "Registers per thread", "");
    var shared = control(box, "shared", "Shared memory per block", "bytes");
    [threads, regs, shared].forEach(function (c) { form.appendChild(c.row); });
    box.appendChild(form);

    var result = el("div", {"class": "occx-result", "aria-live": "polite"});
    var summary = el("p", {"class": "occx-summary", "data-occx-out": "summary"});
    result.appendChild(summary);
    var table = el("table", {"class": "occx-limits"});
    var caption = el("caption", {}, "Blocks per SM that each resource allows");
    table.appendChild(caption);
    var tbody = el("tbody");
    table.appendChild(tbody);
    result.appendChild(table);
    box.appendChild(result);

    var charts = el("div", {"class": "occx-charts"});
    var cT = chart("Occupancy against threads per block", "threads per block");
    var cR = chart("Occupancy against registers per thread", "registers per thread");
    var cS = chart("Occupancy against shared memory per block", "shared memory per block (KiB)");
    [cT, cR, cS].forEach(function (c) { charts.appendChild(c.fig); });
    box.appendChild(charts);

    function spec() { return presets[Number(select.value)]; }
    function value(c) { return Math.round(Number(c.num.value)); }

    function setRanges() {
      var s = spec();
      [[threads, 1, s.max_threads_per_block, 1, 32], [regs, 0, rules.max_registers, 1, 1],
       [shared, 0, s.shared_per_block_optin, 1, 256]].forEach(function (r) {
        r[0].num.min = r[1]; r[0].num.max = r[2]; r[0].num.step = r[3];
        r[0].range.min = r[1]; r[0].range.max = r[2]; r[0].range.step = r[4];
      });
    }

    function update() {
      var s = spec(), t = value(threads), r = value(regs), m = value(shared);
      [threads, regs, shared].forEach(function (c) { c.range.value = c.num.value; });
      var o = calculate(s, rules, t, r, m);
      box.setAttribute("data-occx-blocks", o.error ? "" : String(o.blocks));
      box.setAttribute("data-occx-binding", o.error ? "" : o.binding.join(","));
      box.setAttribute("data-occx-error", o.error || "");
      tbody.textContent = "";
      if (o.error) {
        summary.textContent = o.error;
        summary.className = "occx-summary occx-error";
      } else {
        summary.className = "occx-summary";
        summary.textContent = o.blocks + (o.blocks === 1 ? " block" : " blocks") + " per SM, " + o.warps + " of " +
          o.maxWarps + " warps: occupancy " + Math.round(100 * o.occupancy) + "%. " +
          "Bound by " + o.binding.join(" and ") + ".";
        o.limits.forEach(function (l) {
          var tr = el("tr", {"class": o.binding.indexOf(l[0]) >= 0 ? "occx-binding" : ""});
          tr.appendChild(el("th", {scope: "row"}, l[0]));
          tr.appendChild(el("td", {}, String(l[1])));
          tr.appendChild(el("td", {}, o.binding.indexOf(l[0]) >= 0 ? "binds" : ""));
          tbody.appendChild(tr);
        });
      }
      function occ(tt, rr, mm) { var q = calculate(s, rules, tt, rr, mm); return q.error ? null : q.occupancy; }
      var xs = [], ys = [];
      for (var x = 32; x <= s.max_threads_per_block; x += 32) { xs.push(x); ys.push(occ(x, r, m)); }
      drawChart(cT, xs, ys, {x: Math.min(Math.max(t, 32), s.max_threads_per_block), y: occ(t, r, m)}, String);
      xs = []; ys = [];
      for (x = 0; x <= rules.max_registers; x += 1) { xs.push(x); ys.push(occ(t, x, m)); }
      drawChart(cR, xs, ys, {x: r, y: occ(t, r, m)}, String);
      xs = []; ys = [];
      var stepS = Math.max(rules.shared_unit, Math.ceil(s.shared_per_block_optin / 256 / rules.shared_unit) * rules.shared_unit);
      for (x = 0; x <= s.shared_per_block_optin; x += stepS) { xs.push(x); ys.push(occ(t, r, x)); }
      drawChart(cS, xs, ys, {x: m, y: occ(t, r, m)}, function (b) { return Math.round(b / 1024) + ""; });
    }

    [threads, regs, shared].forEach(function (c) {
      c.num.addEventListener("input", update);
      c.range.addEventListener("input", function () { c.num.value = c.range.value; update(); });
    });
    select.addEventListener("change", function () { setRanges(); update(); });
    threads.num.value = data.start.threads;
    regs.num.value = data.start.registers;
    shared.num.value = data.start.shared;
    select.value = String(presets.length > 4 ? 0 : presets.length - 1);   // this GPU if given, else the H200
    setRanges();
    update();
  }

  window.OccupancyCalculator = {mount: mount, calculate: calculate};
})();
