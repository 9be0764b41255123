/* The Bank Conflict Explorer. gemmlab/bank_explorer.py computes every case the page can select with
   gemmlab.banks.bank_access (wavefronts, ideal, groups of lanes, the sentence that says why) and renders
   them into the page; this script only looks the chosen case up and draws it. The browser tests set the
   inputs to every case and compare what the page shows with the bank model. No network, no libraries. */
(function () {
  "use strict";
  if (window.BankExplorer) return;
  var SVG = "http://www.w3.org/2000/svg";
  var COL = 20, LEFT = 36, LANE_Y = 24, BANK_Y = 86, ROW = 18;   // the picture's grid, in SVG units
  var TYPES = {4: "float", 8: "float2", 16: "float4"};
  var LABELS = {
    mode: {stride: "A stride between lanes", padded: "A column of a padded tile", swizzled: "A swizzled tile",
           kernel: "A course kernel's instruction"},
    width: {4: "4 bytes (float)", 8: "8 bytes (float2)", 16: "16 bytes (float4)"},
    row: {32: "32 words (128 bytes)", 64: "64 words (256 bytes)"},
    pattern: {column: "a column: lane l reads row l", row: "the rows: lane l reads the tile's l-th access"},
    swizzle: {none: "none", chunks: "16-byte chunks: chunk ^ (row % 8)", words: "single words: word ^ (row % 32)"},
    layout: {plain: "plain: B tile read Bs[k][tx] (02_tiled.cu)", transposed: "transposed: Bs[tx][k] (04_banks.cu)",
             padded: "padded: Bs[tx][k], rows of T + 1 (04_banks.cu)"}
  };
  // The inputs, in the page's order: [field, label, kind, unit].
  var INPUTS = [["mode", "Access", "select"], ["stride", "Stride between lanes", "number", "words"],
                ["columns", "Tile columns T", "select"], ["pad", "Padding per row", "select", "words"],
                ["row", "Row length", "select"], ["pattern", "Lanes read", "select"],
                ["column", "Column k", "select", "word"], ["swizzle", "Swizzle", "select"],
                ["tile", "Tile T", "select"], ["layout", "B tile layout", "select"],
                ["instruction", "Instruction", "select"], ["width", "Bytes per lane", "select"]];

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fill(select, values, label) {
    var keep = select.value;
    select.textContent = "";
    values.forEach(function (v, i) { select.appendChild(el("option", {value: String(v)}, label(v, i))); });
    if (values.map(String).indexOf(keep) >= 0) select.value = keep;
  }
  function span(ws) { return ws.length === 1 ? String(ws[0]) : ws[0] + "–" + ws[ws.length - 1]; }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // What the chosen access is, in a line of CUDA or words (the numbers are all in the data).
  function describe(v, data) {
    var w = Number(v.width), t = TYPES[w];
    function read(at) { return w === 4 ? at : "*reinterpret_cast<" + t + "*>(&" + at + ")"; }
    if (v.mode === "stride") return t + " v = " + read("s[" + v.stride + " * lane]") + ";";
    if (v.mode === "padded")
      return "__shared__ float tile[32][" + v.columns + " + " + v.pad + "];  " + t + " v = " + read("tile[lane][0]") + ";";
    if (v.mode === "swizzled") {
      var at = {none: "c", chunks: "((c / 4) ^ (r % 8)) * 4 + c % 4", words: "c ^ (r % 32)"}[v.swizzle];
      var who = v.pattern === "column" ? "Lane l reads row l, word " + v.column
        : "Lane l reads words " + (w / 4) + "·l onwards, row by row";
      return who + " (a " + t + "), of rows of " + v.row + " words; word c of row r is stored at word " + at + ".";
    }
    var ins = data.instructions[v.layout][Number(v.instruction)];
    return ins[0] + " (" + ins[1] + ") in the " + v.tile + "×" + v.tile + " tiled kernel, " + v.layout +
      " B tile; lane l of warp 0 has tx = l % " + v.tile + ", ty = l / " + v.tile + ".";
  }

  function mount(box, data) {
    if (!box || box.getAttribute("data-mounted")) return;
    box.setAttribute("data-mounted", "1");
    box.textContent = "";
    var opts = data.options, fields = data.fields, ctl = {}, rows = {};
    var form = el("div", {"class": "bkx-controls"});
    INPUTS.forEach(function (d) {
      var f = d[0], row = el("div", {"class": "bkx-control"}), id = box.id + "-" + f, input;
      row.appendChild(el("label", {"for": id}, d[1]));
      if (d[2] === "number") {
        input = el("input", {type: "number", id: id, "data-bkx": f, inputmode: "numeric", min: opts[f][0],
                             max: opts[f][1], step: 1});
        row.appendChild(input);
        row.appendChild(el("span", {"class": "bkx-unit"}, d[3]));
        var range = el("input", {type: "range", min: opts[f][0], max: opts[f][1], step: 1, tabindex: "-1",
                                 "aria-label": d[1] + " (slider)"});
        row.appendChild(range);
        range.addEventListener("input", function () { input.value = range.value; update(); });
        input.range = range;
      } else {
        input = el("select", {id: id, "data-bkx": f});
        row.appendChild(input);
        if (d[3]) row.appendChild(el("span", {"class": "bkx-unit"}, d[3]));
      }
      input.addEventListener(d[2] === "number" ? "input" : "change", function () { refill(); update(); });
      ctl[f] = input; rows[f] = row;
      form.appendChild(row);
    });
    box.appendChild(form);
    ["mode", "width", "columns", "row", "pattern", "swizzle", "tile", "layout"].forEach(function (f) {
      fill(ctl[f], opts[f], function (v) { return (LABELS[f] && LABELS[f][v]) || String(v); });
    });
    fill(ctl.pad, opts.pad, function (v) { return "+ " + v; });

    var what = el("p", {"class": "bkx-what", "data-bkx-out": "what"});
    var stat = el("p", {"class": "bkx-stat", "data-bkx-out": "count"});
    var live = el("div", {"class": "bkx-result", "aria-live": "polite"});
    var summary = el("p", {"class": "bkx-summary", "data-bkx-out": "summary"});
    live.appendChild(summary);
    var fig = el("figure", {"class": "bkx-figure"});
    var svg = svgEl("svg", {role: "img"});
    fig.appendChild(svg);
    fig.appendChild(el("figcaption", {}, "Lanes along the top, each joined to the bank(s) it asks; under each " +
      "bank, the distinct words each group of lanes wants from it. A bank delivers one word per wavefront, so a " +
      "second box down a column (orange) is a second wavefront for that group; lanes that want the same word " +
      "share one box. The table below lists every lane."));
    var tables = el("div", {"class": "bkx-tables"});
    [what, stat, live, fig, tables].forEach(function (e) { box.appendChild(e); });

    function values() {
      var v = {};
      Object.keys(ctl).forEach(function (f) { v[f] = ctl[f].value; });
      if (v.pattern === "row") v.column = "0";      // the row pattern has no column
      return v;
    }
    // The choices that depend on other inputs: the swizzled tile's columns, the kernel's instructions.
    function refill() {
      var v = values(), cols = [];
      for (var c = 0; c < Number(v.row); c += 4) cols.push(c);
      fill(ctl.column, cols, String);
      fill(ctl.instruction, data.instructions[v.layout].map(function (_, i) { return i; }), function (i) {
        var ins = data.instructions[v.layout][i];
        return ins[0] + " (" + ins[1] + ")";
      });
      var shown = fields[v.mode].concat(["mode"]);
      Object.keys(rows).forEach(function (f) {
        rows[f].hidden = shown.indexOf(f) < 0 || (f === "column" && v.pattern === "row");
      });
    }

    function showError(message) {
      box.setAttribute("data-bkx-wavefronts", "");
      box.setAttribute("data-bkx-ideal", "");
      box.setAttribute("data-bkx-error", message);
      summary.textContent = message;
      summary.className = "bkx-summary bkx-error";
      stat.textContent = "";
      svg.setAttribute("aria-label", "No picture: " + message);
      svg.setAttribute("viewBox", "0 0 10 1");
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      tables.textContent = "";
    }

    function update() {
      var v = values();
      var s = ctl.stride;
      s.range.value = s.value;
      what.textContent = describe(v, data);
      var stride = s.value.trim() === "" ? NaN : Number(s.value);
      if (v.mode === "stride" && !(Number.isInteger(stride) && stride >= opts.stride[0] && stride <= opts.stride[1])) {
        box.setAttribute("data-bkx-key", "");
        showError("The stride is a whole number of words from " + opts.stride[0] + " to " + opts.stride[1] + ".");
        return;
      }
      if (v.mode === "stride") v.stride = String(stride);
      var key = v.mode + ":" + fields[v.mode].map(function (f) { return v[f]; }).join("/");
      box.setAttribute("data-bkx-key", key);
      var r = data.results[data.cases[key]];
      if (!r) { showError("No such case: " + key); return; }
      if (r.error) { showError(r.error); return; }
      box.setAttribute("data-bkx-wavefronts", String(r.wf));
      box.setAttribute("data-bkx-ideal", String(r.ideal));
      box.setAttribute("data-bkx-error", "");
      summary.className = "bkx-summary";
      summary.textContent = r.why;
      stat.textContent = plural(r.wf, "wavefront") + ", ideal " + r.ideal +
        (r.wf > r.ideal ? ": " + plural(r.wf - r.ideal, "bank conflict") + " (extra wavefronts)" : ": no bank conflict");
      draw(r);
      lanesTable(r);
    }

    function laneWords(r, lane) {
      var first = r.a[lane] / 4, ws = [];
      for (var i = 0; i < r.w / 4; i++) ws.push(first + i);
      return ws;
    }

    function draw(r) {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      var n = r.a.length, nb = data.banks, hl = r.hl || [-1, -1, []];
      var W = LEFT + nb * COL + 4;
      function cx(b) { return LEFT + (b + 0.5) * COL; }
      svg.appendChild(svgEl("text", {x: 2, y: LANE_Y, "class": "bkx-axis"}, "lane"));
      svg.appendChild(svgEl("text", {x: 2, y: BANK_Y, "class": "bkx-axis"}, "bank"));
      for (var b = 0; b < nb; b++) {
        svg.appendChild(svgEl("text", {x: cx(b), y: BANK_Y, "text-anchor": "middle",
                                       "class": "bkx-num" + (b === hl[1] ? " bkx-hl-text" : "")}, String(b)));
      }
      for (var l = 0; l < n; l++) {
        var banksOf = laneWords(r, l).map(function (w) { return w % nb; });
        var mid = (cx(Math.min.apply(null, banksOf)) + cx(Math.max.apply(null, banksOf))) / 2;
        var isHl = hl[2].indexOf(l) >= 0;
        svg.appendChild(svgEl("text", {x: cx(l), y: LANE_Y, "text-anchor": "middle",
                                       "class": "bkx-num" + (isHl ? " bkx-hl-text" : "")}, String(l)));
        svg.appendChild(svgEl("line", {x1: cx(l), y1: LANE_Y + 5, x2: mid, y2: BANK_Y - 12,
                                       "class": isHl ? "bkx-link bkx-hl-link" : "bkx-link"}));
      }
      var y = BANK_Y + 10;
      for (var g = 0; g * r.g < n; g++) {
        var lanes = [], stacks = {}, deepest = 0;
        for (l = g * r.g; l < Math.min(n, (g + 1) * r.g); l++) lanes.push(l);
        lanes.forEach(function (lane) {            // each bank's distinct words, in the order lanes ask
          laneWords(r, lane).forEach(function (w) {
            var s = stacks[w % nb] = stacks[w % nb] || [];
            var hit = s.filter(function (e) { return e.word === w; })[0];
            if (hit) hit.lanes.push(lane); else s.push({word: w, lanes: [lane]});
            deepest = Math.max(deepest, s.length);
          });
        });
        svg.appendChild(svgEl("text", {x: 2, y: y + 12, "class": "bkx-group"},
          (r.p.length > 1 ? "lanes " + lanes[0] + "–" + lanes[lanes.length - 1] + ": " : "") +
          plural(r.p[g], "wavefront")));
        var top = y + 18;
        Object.keys(stacks).forEach(function (bk) {
          stacks[bk].forEach(function (e, i) {
            var cls = "bkx-word" + (i > 0 ? " bkx-extra" : "") + (g === hl[0] && Number(bk) === hl[1] ? " bkx-hl" : "");
            var rect = svgEl("rect", {x: LEFT + Number(bk) * COL + 1, y: top + i * ROW, width: COL - 2, height: ROW - 2,
                                      rx: 2, "class": cls, "data-group": g, "data-bank": bk, "data-word": e.word});
            rect.appendChild(svgEl("title", {}, "bank " + bk + ", word " + e.word + ": lane" +
              (e.lanes.length > 1 ? "s " : " ") + e.lanes.join(", ")));
            svg.appendChild(rect);
            svg.appendChild(svgEl("text", {x: cx(Number(bk)), y: top + i * ROW + 11.5, "text-anchor": "middle",
                                           "class": "bkx-wordnum" + (e.word > 999 ? " bkx-small" : "")}, String(e.word)));
          });
        });
        y = top + deepest * ROW + 6;
      }
      svg.setAttribute("viewBox", "0 0 " + W + " " + y);
      svg.setAttribute("aria-label", "Lanes and the banks they ask, " + plural(r.wf, "wavefront") + " where " +
        r.ideal + " would do. " + r.why + " Every lane's words and banks are in the table below.");
    }

    function lanesTable(r) {
      tables.textContent = "";
      var hl = r.hl ? r.hl[2] : [], half = Math.ceil(r.a.length / 2);
      [[0, half], [half, r.a.length]].forEach(function (part) {
        var table = el("table", {"class": "bkx-lanes"});
        table.appendChild(el("caption", {}, "Lanes " + part[0] + "–" + (part[1] - 1)));
        var head = el("tr");
        ["lane", "byte address", "word", "bank"].forEach(function (h) { head.appendChild(el("th", {scope: "col"}, h)); });
        var thead = el("thead"), tbody = el("tbody");
        thead.appendChild(head);
        for (var l = part[0]; l < part[1]; l++) {
          var ws = laneWords(r, l);
          var tr = el("tr", {"data-lane": l, "class": hl.indexOf(l) >= 0 ? "bkx-hl-row" : ""});
          tr.appendChild(el("th", {scope: "row"}, String(l)));
          tr.appendChild(el("td", {}, String(r.a[l])));
          tr.appendChild(el("td", {"data-bkx-cell": "words"}, span(ws)));
          tr.appendChild(el("td", {"data-bkx-cell": "banks"}, span(ws.map(function (w) { return w % data.banks; }))));
          tbody.appendChild(tr);
        }
        table.appendChild(thead);
        table.appendChild(tbody);
        tables.appendChild(table);
      });
    }

    var st = data.start;
    ["mode", "width", "columns", "pad", "row", "pattern", "swizzle", "tile", "layout"].forEach(function (f) {
      ctl[f].value = String(st[f]);
    });
    ctl.stride.value = String(st.stride);
    refill();
    ctl.column.value = String(st.column);
    ctl.instruction.value = String(st.instruction);
    update();
  }

  window.BankExplorer = {mount: mount};
})();
