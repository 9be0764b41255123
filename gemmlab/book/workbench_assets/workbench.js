/* The Shared Memory Workbench: plays back, step by step, the plans that gemmlab.workbench
 * computed in Python (naive and tiled GEMM, block by block).
 *
 * Every count on the page is a sum of the step deltas in the payload (global, shared, tg, ts);
 * nothing here derives a load count from a formula of its own. The matrices' values are small
 * integers from a fixed formula, so the running sum in the selected thread's register is exact.
 *
 * Plain ES2017, no network, no library. The only global is window.SMWorkbench; every widget
 * keeps its state in its own closure and prefixes its element ids with its container's id, so
 * several widgets can share a page.
 */
(function () {
  'use strict';
  if (window.SMWorkbench && typeof window.SMWorkbench.mount === 'function') {
    return;                                   // an earlier widget on this page defined it
  }

  // The SVG namespace, as the HTML parser assigns it (no URL literal in the page).
  var SVGNS = (function () {
    var probe = document.createElement('div');
    probe.innerHTML = '<svg></svg>';
    return probe.firstChild.namespaceURI;
  })();
  var autoId = 0;

  // ------------------------------------------------------------------ small DOM helpers

  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'text') node.textContent = String(v);
      else if (k.slice(0, 2) === 'on' && typeof v === 'function') node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    });
  }

  function addKids(node, kids) {
    kids.forEach(function (kid) {
      if (kid === null || kid === undefined || kid === false) return;
      if (Array.isArray(kid)) addKids(node, kid);
      else if (typeof kid === 'string' || typeof kid === 'number') node.appendChild(document.createTextNode(String(kid)));
      else node.appendChild(kid);
    });
  }

  function h(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    addKids(node, Array.prototype.slice.call(arguments, 2));
    return node;
  }

  function s(tag, attrs) {
    var node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    addKids(node, Array.prototype.slice.call(arguments, 2));
    return node;
  }

  function code(text) { return h('code', null, text); }

  function fmt(n) {
    if (Number.isInteger(n)) return n.toLocaleString('en-US');
    return n.toLocaleString('en-US', { maximumFractionDigits: 2 });
  }

  function num(v) { return v < 0 ? '\u2212' + String(-v) : String(v); }    // a real minus sign
  function par(v) { return v < 0 ? '(' + num(v) + ')' : String(v); }

  // A count and its noun, in agreement: "1 block", "2 blocks", "1 load request".
  function plural(n, one, many) { return fmt(n) + ' ' + (n === 1 ? one : (many || one + 's')); }

  // The k of a step: "k = 4" for one, "k = 4…7" for a range [k0, k1).
  function kRange(k0, k1) { return k1 - 1 <= k0 ? 'k = ' + k0 : 'k = ' + k0 + '\u2026' + (k1 - 1); }

  function bytes(n) {
    if (n >= 1024 && n % 1024 === 0) return fmt(n) + ' B (' + fmt(n / 1024) + ' KB)';
    return fmt(n) + ' B';
  }

  // The demo's matrices: small integers, so that every partial sum is exact.
  function valA(i, j) { return ((i * 7 + j * 3) % 5) - 2; }
  function valB(i, j) { return ((i * 3 + j * 5 + 1) % 5) - 2; }

  // ------------------------------------------------------------------ one widget

  function mount(container, data) {
    if (!container || !data) return null;
    if (container.getAttribute('data-smwb-mounted') === '1') return null;
    container.setAttribute('data-smwb-mounted', '1');
    if (!container.id) container.id = 'smwb-auto-' + (++autoId);
    var uid = container.id;
    function id(name) { return uid + '-' + name; }
    function url(name) { return 'url(#' + id(name) + ')'; }

    var M = data.M, N = data.N, K = data.K;
    var st = {
      mode: data.mode === 'tiled' ? 'tiled' : 'naive',
      T: data.T,
      pos: 0,            // steps played so far, over the whole launch (a global step index)
      focus: 0,          // the block on show: the block of the last step played, or the one jumped to
      row: 0, col: 0,    // the followed thread, by its element of C
      playing: false, timer: null, speed: 4,
      said: '',          // what the live region last announced
      note: '',          // said once before the next announcement (why Play stopped)
      cursor: 0          // the block of C that holds the grid's one Tab stop (roving tabindex)
    };
    var P = null;        // the current plan with its prefix sums
    var ui = {};         // elements that render() updates

    // ---------------------------------------------------------------- the plan, added up

    function derive() {
      var plan = data.plans[st.mode][String(st.T)];
      var tpls = plan.templates.map(function (steps) {
        var cg = [0], cs = [0];
        steps.forEach(function (x) {
          cg.push(cg[cg.length - 1] + x.global);
          cs.push(cs[cs.length - 1] + x.shared);
        });
        return { steps: steps, cg: cg, cs: cs, n: steps.length };
      });
      var nb = plan.blocks, bt = plan.block_template;
      var start = [0], bg = [0], bs = [0];
      for (var b = 0; b < nb; b++) {
        var t = tpls[bt[b]];
        start.push(start[b] + t.n);
        bg.push(bg[b] + t.cg[t.n]);
        bs.push(bs[b] + t.cs[t.n]);
      }
      var phases = 0;
      tpls[0].steps.forEach(function (x) { if (x.kind === 'load') phases++; });
      P = { plan: plan, T: plan.T, gx: plan.grid[0], gy: plan.grid[1], nb: nb, bt: bt, tpls: tpls,
            start: start, bg: bg, bs: bs, total: start[nb], phases: phases };
    }

    function blockAt(pos) {           // the block that owns step index pos (pos < total)
      var lo = 0, hi = P.nb - 1;
      while (lo < hi) {
        var mid = (lo + hi + 1) >> 1;
        if (P.start[mid] <= pos) lo = mid; else hi = mid - 1;
      }
      return lo;
    }

    function blocksDone() { return st.pos >= P.total ? P.nb : blockAt(st.pos); }

    function launchTotals() {         // sums of the deltas of every step before st.pos
      if (st.pos >= P.total) return { g: P.bg[P.nb], s: P.bs[P.nb] };
      var b = blockAt(st.pos), t = P.tpls[P.bt[b]], j = st.pos - P.start[b];
      return { g: P.bg[b] + t.cg[j], s: P.bs[b] + t.cs[j] };
    }

    function blockXY(b) { return { bx: b % P.gx, by: Math.floor(b / P.gx) }; }

    function played(b) {               // how many of block b's steps have been played
      var t = P.tpls[P.bt[b]];
      return Math.max(0, Math.min(t.n, st.pos - P.start[b]));
    }

    function threadState() {
      var T = P.T, r = st.row, c = st.col;
      var bx = Math.floor(c / T), by = Math.floor(r / T), b = by * P.gx + bx;
      var idx = (r % T) * T + (c % T);
      var t = P.tpls[P.bt[b]], j = played(b);
      var g = 0, sh = 0, acc = 0, last = null;
      for (var i = 0; i < j; i++) {
        var x = t.steps[i];
        if (x.tg) g += x.tg[idx];
        if (x.ts) sh += x.ts[idx];
        if (x.kind === 'k' || x.kind === 'compute') {
          var d = 0;
          for (var k = x.k0; k < x.k1; k++) d += valA(r, k) * valB(k, c);
          last = { step: x, before: acc, delta: d };
          acc += d;
        }
      }
      var full = 0;
      for (var kk = 0; kk < K; kk++) full += valA(r, kk) * valB(kk, c);
      return { r: r, c: c, bx: bx, by: by, b: b, ty: r % T, tx: c % T, idx: idx, j: j, n: t.n,
               g: g, sh: sh, acc: acc, last: last, full: full, done: j >= t.n };
    }

    function focusState() {
      var b = st.focus, t = P.tpls[P.bt[b]], j = played(b), xy = blockXY(b);
      return { b: b, bx: xy.bx, by: xy.by, t: t, j: j, step: j > 0 ? t.steps[j - 1] : null, si: j - 1 };
    }

    // ---------------------------------------------------------------- actions

    function advance() {
      if (st.pos >= P.total) return false;
      st.focus = blockAt(st.pos);
      st.pos += 1;
      return true;
    }

    function stop() {
      st.playing = false;
      if (st.timer !== null) { clearInterval(st.timer); st.timer = null; }
    }

    function forward() { stop(); advance(); render(); }

    function back() {
      stop();
      if (st.pos > 0) {
        st.pos -= 1;
        st.focus = st.pos > 0 ? blockAt(st.pos - 1) : 0;
      }
      render();
    }

    function reset() { stop(); st.pos = 0; st.focus = 0; render(); }

    function tick() {
      if (!container.isConnected) { stop(); return; }
      if (!advance() || st.pos >= P.total) {
        stop();
        st.note = 'Played to the end: all ' + plural(P.total, 'step') + '.';
      }
      render();
    }

    function schedule() {
      if (st.timer !== null) clearInterval(st.timer);
      st.timer = setInterval(tick, Math.round(1000 / st.speed));
    }

    function play() {
      if (st.pos >= P.total) { st.pos = 0; st.focus = 0; }
      st.playing = true;
      schedule();
      render();
    }

    function togglePlay() {
      if (!st.playing) { play(); return; }
      stop();
      st.note = 'Paused at step ' + fmt(st.pos) + ' of ' + fmt(P.total) + '.';
      render();
    }

    function jumpTo(b) {
      stop();
      st.pos = P.start[b];
      st.focus = b;
      var xy = blockXY(b), T = P.T;
      var inside = Math.floor(st.row / T) === xy.by && Math.floor(st.col / T) === xy.bx;
      if (!inside) { st.row = xy.by * T; st.col = xy.bx * T; }
      render();
    }

    function pickThread(r, c) {
      r = Math.max(0, Math.min(M - 1, r));
      c = Math.max(0, Math.min(N - 1, c));
      st.row = r; st.col = c;
      var b = Math.floor(r / P.T) * P.gx + Math.floor(c / P.T);
      if (b !== st.focus) {                   // follow a thread of another block: play that block
        stop();
        st.pos = P.start[b];
        st.focus = b;
      }
      render();
    }

    function rebuild() {
      stop();
      derive();
      st.pos = 0; st.focus = 0;
      buildMatrices();
      buildBlockPanel();
      renderReuse();
      render();
    }

    // ---------------------------------------------------------------- static parts

    container.textContent = '';

    var defs = s('svg', { class: 'smwb-defs', width: 0, height: 0, 'aria-hidden': 'true', focusable: 'false' },
      s('defs', null,
        s('pattern', { id: id('p-a'), patternUnits: 'userSpaceOnUse', width: 5, height: 5 },
          s('rect', { class: 'pa-bg', width: 5, height: 5 }),
          s('line', { class: 'pa-ln', x1: 0, y1: 1.25, x2: 5, y2: 1.25 })),
        s('pattern', { id: id('p-b'), patternUnits: 'userSpaceOnUse', width: 5, height: 5 },
          s('rect', { class: 'pb-bg', width: 5, height: 5 }),
          s('line', { class: 'pb-ln', x1: 1.25, y1: 0, x2: 1.25, y2: 5 })),
        s('pattern', { id: id('p-k'), patternUnits: 'userSpaceOnUse', width: 4, height: 4 },
          s('rect', { class: 'pk-bg', width: 4, height: 4 }),
          s('path', { class: 'pk-ln', d: 'M0,4 L4,0 M-1,1 L1,-1 M3,5 L5,3' })),
        s('pattern', { id: id('p-idle'), patternUnits: 'userSpaceOnUse', width: 4, height: 4 },
          s('rect', { class: 'pi-bg', width: 4, height: 4 }),
          s('path', { class: 'pi-ln', d: 'M0,0 L4,4 M-1,3 L1,5 M3,-1 L5,1' })),
        s('pattern', { id: id('p-pad'), patternUnits: 'userSpaceOnUse', width: 4, height: 4 },
          s('rect', { class: 'pp-bg', width: 4, height: 4 }),
          s('circle', { class: 'pp-dot', cx: 2, cy: 2, r: 0.7 })),
        s('pattern', { id: id('p-wait'), patternUnits: 'userSpaceOnUse', width: 6, height: 6 },
          s('rect', { class: 'pw-bg', width: 6, height: 6 }),
          s('line', { class: 'pw-ln', x1: 0, y1: 3, x2: 6, y2: 3 }))));

    var heading = h('div', { class: 'smwb-head' },
      h('h3', { class: 'smwb-title', id: id('title') }, 'Shared Memory Workbench'),
      h('p', { class: 'smwb-sub' }, 'A tiled CUDA GEMM, step by step: what each block reads from global memory, ' +
        'what it stages in shared memory, and what each thread adds to its register.'));

    // controls
    function radio(value, label) {
      var inp = h('input', { type: 'radio', name: id('mode'), id: id('mode-' + value), value: value,
                             'data-testid': 'mode-' + value });
      inp.addEventListener('change', function () { if (inp.checked && st.mode !== value) { st.mode = value; rebuild(); } });
      ui['mode_' + value] = inp;
      return h('label', { class: 'smwb-radio', for: id('mode-' + value) }, inp, ' ' + label);
    }
    var tileSel = h('select', { id: id('tile'), 'data-testid': 'tile-size' },
      data.tiles.map(function (t) { return h('option', { value: t }, t + '\u00d7' + t); }));
    tileSel.addEventListener('change', function () { st.T = parseInt(tileSel.value, 10); rebuild(); });
    ui.tile = tileSel;

    function button(name, label, text, onclick, extra) {
      var b = h('button', Object.assign({ type: 'button', class: 'smwb-btn smwb-' + name, 'data-testid': name,
                                          'aria-label': label, title: label }, extra || {}), text);
      b.addEventListener('click', onclick);
      return b;
    }
    ui.reset = button('reset', 'Reset', '\u21ba Reset', reset);
    ui.back = button('back', 'Step back', '\u25c0 Back', back);
    ui.play = button('play', 'Play', '\u25b6 Play', togglePlay, { 'aria-pressed': 'false' });
    ui.forward = button('forward', 'Step forward', 'Step \u25b6', forward);

    var speedOut = h('output', { id: id('speed-out'), for: id('speed') }, st.speed + ' steps/s');
    var speed = h('input', { type: 'range', id: id('speed'), min: 1, max: 30, step: 1, value: st.speed,
                             'data-testid': 'speed', 'aria-valuetext': st.speed + ' steps per second' });
    speed.addEventListener('input', function () {
      st.speed = parseInt(speed.value, 10) || 4;
      speedOut.textContent = st.speed + ' steps/s';
      speed.setAttribute('aria-valuetext', st.speed + ' steps per second');
      if (st.playing) schedule();
    });

    function numberInput(name, label) {
      var inp = h('input', { type: 'number', id: id(name), min: 0, step: 1, value: 0, inputmode: 'numeric',
                             'data-testid': 'thread-' + name, 'aria-label': label });
      inp.addEventListener('change', function () {
        var v = parseInt(inp.value, 10);
        if (isNaN(v)) { render(); return; }
        if (name === 'row') pickThread(v, st.col); else pickThread(st.row, v);
      });
      return inp;
    }
    ui.rowIn = numberInput('row', 'Row of the followed thread (its element of C)');
    ui.colIn = numberInput('col', 'Column of the followed thread (its element of C)');
    ui.rowIn.setAttribute('max', M - 1);
    ui.colIn.setAttribute('max', N - 1);

    ui.step = h('span', { 'data-testid': 'step' }, '0/0');
    // The controls that drive the figures and the panels below them: one compact bar that stays in
    // view (position: sticky) while the reader scrolls through the widget, on a phone as well.
    var bar = h('div', { class: 'smwb-controlbar', role: 'group', 'aria-label': 'Workbench controls',
                         'data-testid': 'control-bar' },
      h('fieldset', { class: 'smwb-mode', role: 'radiogroup', 'aria-label': 'Kernel' },
        h('legend', null, 'Kernel'), radio('naive', 'Naive'), radio('tiled', 'Tiled')),
      h('div', { class: 'smwb-field' },
        h('label', { for: id('tile') }, h('span', { class: 'smwb-wide' }, 'Block / tile '), 'T\u00d7T'), tileSel),
      h('div', { class: 'smwb-buttons', role: 'group', 'aria-label': 'Playback' },
        ui.reset, ui.back, ui.play, ui.forward),
      h('span', { class: 'smwb-stepcount' }, h('span', { class: 'smwb-wide' }, 'step '), ui.step));

    var controls = h('div', { class: 'smwb-controls' },
      h('div', { class: 'smwb-field smwb-speed' }, h('label', { for: id('speed') }, 'Speed'), speed, speedOut),
      h('div', { class: 'smwb-field smwb-thread', role: 'group', 'aria-labelledby': id('thread-label') },
        h('span', { class: 'smwb-thread-label', id: id('thread-label') }, 'Followed thread:'),
        h('span', { class: 'smwb-pair' }, h('label', { for: id('row'), class: 'smwb-mini' }, 'row'), ui.rowIn),
        h('span', { class: 'smwb-pair' }, h('label', { for: id('col'), class: 'smwb-mini' }, 'col'), ui.colIn)));

    // What the step on show does, in words. The sentence on the page changes with every step; the
    // live region beside it (for screen readers, not shown) says it only when the reader moves one
    // step, jumps, or changes a setting, and once when Play stops: never at every step of Play.
    ui.status = h('p', { class: 'smwb-status', 'data-testid': 'status', id: id('status') });
    ui.announce = h('p', { class: 'smwb-sr', role: 'status', 'aria-live': 'polite', 'aria-atomic': 'true',
                           'data-testid': 'announce' });
    var statusBar = h('div', { class: 'smwb-statusbar' }, ui.status, ui.announce);

    ui.matrices = h('div', { class: 'smwb-fig smwb-fig-matrices' });
    ui.blockFig = h('div', { class: 'smwb-fig smwb-fig-block' });
    var stage = h('div', { class: 'smwb-stage', tabindex: '0', id: id('stage'), role: 'group',
                           'aria-label': 'Workbench figure. Right arrow: step forward; left arrow: step back; ' +
                                         'P or Space: play or pause. Tab reaches the grid of blocks of C: ' +
                                         'arrow keys move in it, Enter or Space selects a block.' },
      ui.matrices, ui.blockFig);

    ui.note = h('div', { class: 'smwb-note', 'data-testid': 'mode-note' });

    // memory tiers
    ui.gLoads = h('span', { class: 'smwb-count', 'data-testid': 'global-loads' }, '0');
    ui.sLoads = h('span', { class: 'smwb-count', 'data-testid': 'shared-loads' }, '0');
    ui.tG = h('span', { class: 'smwb-count', 'data-testid': 'thread-global' }, '0');
    ui.tS = h('span', { class: 'smwb-count', 'data-testid': 'thread-shared' }, '0');
    ui.tWho = h('span', null, '(row 0, col 0)');
    ui.sharedUse = h('p', { class: 'smwb-tier-extra' });
    var tiers = h('section', { class: 'smwb-tiers', 'aria-label': 'Memory tiers' },
      h('div', { class: 'smwb-tier smwb-tier-global', 'data-testid': 'tier-global' },
        h('h4', null, 'Global memory (DRAM)'),
        h('p', null, 'Seen by every block of the grid; each access takes hundreds of cycles.'),
        h('p', { class: 'smwb-tier-num' }, 'load requests so far: ', ui.gLoads)),
      h('div', { class: 'smwb-tier smwb-tier-shared', 'data-testid': 'tier-shared' },
        h('h4', null, 'Shared memory (SRAM)'),
        h('p', null, 'One copy per block, on the chip; tens of cycles per access.'),
        h('p', { class: 'smwb-tier-num' }, 'shared reads so far: ', ui.sLoads), ui.sharedUse),
      h('div', { class: 'smwb-tier smwb-tier-thread', 'data-testid': 'tier-thread' },
        h('h4', null, 'Selected thread ', ui.tWho),
        h('p', null, 'What this one thread has requested so far.'),
        h('p', { class: 'smwb-tier-num' }, 'global loads: ', ui.tG),
        h('p', { class: 'smwb-tier-num' }, 'shared reads: ', ui.tS)));

    // reuse panel
    ui.rT = h('span', null);
    ui.rNaive = h('span', { class: 'smwb-count', 'data-testid': 'reuse-loads-naive' });
    ui.rTiled = h('span', { class: 'smwb-count', 'data-testid': 'reuse-loads-tiled' });
    ui.rFactor = h('span', { class: 'smwb-count', 'data-testid': 'reuse-factor' });
    ui.rBytes = h('span', { class: 'smwb-count', 'data-testid': 'shared-bytes' });
    ui.rBytesFormula = h('span', null);
    ui.rBytesKB = h('span', null);
    ui.rWhole = h('span', null);
    ui.rBars = h('div', { class: 'smwb-bars', role: 'list', 'aria-label': 'Reuse factor for each tile size' });
    var reuse = h('section', { class: 'smwb-reuse', 'data-testid': 'reuse', 'aria-labelledby': id('reuse-h') },
      h('h4', { id: id('reuse-h') }, 'Reuse grows with the tile size'),
      h('p', { class: 'smwb-reuse-for' }, 'For T = ', ui.rT, ' on this ' + M + '\u00d7' + K + ' by ' + K + '\u00d7' + N +
        ' product:'),
      h('dl', { class: 'smwb-dl' },
        h('dt', null, 'Global loads per block'),
        h('dd', null, 'naive ', ui.rNaive, ' \u00b7 tiled ', ui.rTiled),
        h('dt', null, 'Reuse factor'),
        h('dd', null, ui.rFactor, '\u00d7 (global loads, naive \u00f7 tiled)'),
        h('dt', null, 'Shared memory per block'),
        h('dd', null, ui.rBytesFormula, ' = ', ui.rBytes, ' B', ui.rBytesKB),
        h('dt', null, 'Whole launch'),
        h('dd', null, ui.rWhole)),
      ui.rBars,
      h('p', { class: 'smwb-fine' }, 'Shared memory per block is 2\u00b7T\u00b2\u00b74 B (two float tiles): ',
        h('strong', null, '2 KB at T = 16, 8 KB at T = 32'), '. With one thread per output element a block ' +
        'has T\u00b2 threads, and a block may have at most ' + fmt(data.max_threads_per_block) +
        ', so T\u00b2 \u2264 1024 and T \u2264 32. Kernels that give each thread several outputs in registers ' +
        '(register tiling, chapters 6\u20137) use larger tiles; for them the limits are shared-memory ' +
        'capacity and occupancy.'));

    // legend
    function swatch(inner) {
      return s('svg', { class: 'smwb-swatch', viewBox: '0 0 24 16', width: 24, height: 16, 'aria-hidden': 'true',
                        focusable: 'false' }, inner);
    }
    function item(sw, text) { return h('li', { role: 'listitem' }, swatch(sw), h('span', null, text)); }
    var legend = h('section', { class: 'smwb-legend', 'data-testid': 'legend', 'aria-labelledby': id('legend-h') },
      h('h4', { id: id('legend-h') }, 'Legend'),
      h('ul', { role: 'list' },
        item(s('rect', { class: 'ov-astrip', x: 1, y: 2, width: 22, height: 12, style: 'fill:' + url('p-a') }), 'A row strip'),
        item(s('rect', { class: 'ov-bstrip', x: 1, y: 2, width: 22, height: 12, style: 'fill:' + url('p-b') }), 'B column strip'),
        item(s('rect', { class: 'ov-ktile', x: 2, y: 2, width: 20, height: 12, style: 'fill:' + url('p-k') }),
          'active K-tile (tiled) / current k (naive)'),
        item(s('path', { class: 'tile-lines', d: 'M1,8 H23 M12,1 V15' }), 'tile boundaries (every T rows / columns / k)'),
        item(s('rect', { class: 'ov-selblock', x: 2, y: 2, width: 20, height: 12 }), 'selected block'),
        item([s('rect', { class: 'cell', x: 4, y: 1, width: 14, height: 14 }),
              s('rect', { class: 'ov-selthread', x: 5.5, y: 2.5, width: 11, height: 11, rx: 5.5 })], 'selected thread'),
        item(s('rect', { class: 'cell idle', x: 1, y: 2, width: 22, height: 12, style: 'fill:' + url('p-idle') }),
          'idle thread: no element of C'),
        item(s('rect', { class: 'sh-cell staged', x: 1, y: 2, width: 22, height: 12 }), 'staged in s_A / s_B'),
        item([s('rect', { class: 'sh-cell pad', x: 1, y: 2, width: 22, height: 12, style: 'fill:' + url('p-pad') }),
              s('text', { class: 'sh-val', x: 12, y: 11.5 }, '0')], 'zero padding (outside A or B)'),
        item([s('rect', { class: 'sh-cell staged', x: 1, y: 2, width: 22, height: 12 }),
              s('rect', { class: 'sh-read', x: 1, y: 5, width: 22, height: 6 })],
          'the row of s_A / column of s_B that the selected thread reads'),
        item(s('rect', { class: 'reg-box', x: 1, y: 2, width: 22, height: 12, rx: 3 }), 'register acc (one thread)'),
        item(s('rect', { class: 'cell written', x: 1, y: 2, width: 22, height: 12 }), 'written to C'),
        item(s('rect', { class: 'th th-load', x: 1, y: 2, width: 22, height: 12 }), 'thread loading from global memory'),
        item(s('rect', { class: 'th th-compute', x: 1, y: 2, width: 22, height: 12 }), 'thread computing from shared memory'),
        item(s('rect', { class: 'th th-wait', x: 1, y: 2, width: 22, height: 12, style: 'fill:' + url('p-wait') }),
          'thread waiting at the barrier'),
        item(s('rect', { class: 'barrier-bar on', x: 0, y: 5, width: 24, height: 6 }),
          'barrier __syncthreads() (lit while the block waits)')));

    // caveats
    var caveats = h('section', { class: 'smwb-caveats', 'data-testid': 'caveats', 'aria-labelledby': id('cav-h') },
      h('h4', { id: id('cav-h') }, 'Caveats'),
      h('ul', null,
        h('li', null, 'The counts are load requests made by threads. When the threads of one warp ask for the ' +
          'same address at once, the hardware serves them with a single request.'),
        h('li', null, 'L1 and L2 caches answer many repeated loads, so the naive kernel moves far fewer bytes from ' +
          'DRAM than its request count suggests; chapter 1 measures that traffic with the hardware counters.'),
        h('li', null, 'Since Volta, the L1 cache and shared memory are one block of on-chip SRAM, split between ' +
          'the two uses.'),
        h('li', null, 'For scale: NVIDIA\u2019s CUDA C++ Best Practices Guide reports about 120 GB/s for the naive ' +
          'kernel on a V100, and about 196 GB/s once both tiles are staged in shared memory.'),
        h('li', null, 'Here the blocks run one after another. A GPU runs many blocks at the same time, and the ' +
          'warps of a block interleave; the order of the steps within one thread is what the model keeps.')));

    container.appendChild(h('div', { class: 'smwb-root' }, defs, heading, bar, controls, statusBar, stage, ui.note,
      tiers, h('div', { class: 'smwb-panels' }, reuse, legend), caveats));

    // ---------------------------------------------------------------- the matrices (SVG)

    function buildMatrices() {
      var T = P.T, gx = P.gx, gy = P.gy, Np = gx * T, Mp = gy * T;
      var c = Math.max(3, Math.min(18, 300 / Math.max(K + Np, K + Mp)));
      var aW = K * c, bH = K * c, pad = 6;
      var xA = pad + Math.max(0, 104 - aW), xC = xA + aW + 8;
      var yB = 32 + Math.max(0, 36 - bH), yC = yB + bH + 8;
      var W = Math.max(xC + Np * c + pad, xC + 150), H = yC + Mp * c + 36;
      var L = { c: c, xA: xA, xC: xC, yB: yB, yC: yC, T: T };
      ui.L = L;
      var sw = c >= 8 ? 0.6 : 0.3;

      var svg = s('svg', { class: 'smwb-svg', viewBox: '0 0 ' + W.toFixed(1) + ' ' + H.toFixed(1), role: 'group',
                           'aria-label': 'Matrices: B (K\u00d7N) on top, A (M\u00d7K) on the left, C (M\u00d7N) in ' +
                           plural(P.gx * P.gy, 'block') + ' of ' + T + '\u00d7' + T + ' threads',
                           style: '--sw:' + sw });

      // labels
      svg.appendChild(s('text', { class: 'lbl', x: xC, y: yB - 17 },
        s('tspan', { class: 'lbl-big' }, 'B'), '  K\u00d7N = ' + K + '\u00d7' + N));
      svg.appendChild(s('text', { class: 'lbl lbl-sub', x: xC, y: yB - 5 }, 'global memory'));
      svg.appendChild(s('text', { class: 'lbl', x: xA + aW - 2, y: yC - 26, 'text-anchor': 'end' },
        s('tspan', { class: 'lbl-big' }, 'A'), '  M\u00d7K = ' + M + '\u00d7' + K));
      svg.appendChild(s('text', { class: 'lbl lbl-sub', x: xA + aW - 2, y: yC - 14, 'text-anchor': 'end' },
        'global memory'));
      svg.appendChild(s('text', { class: 'lbl', x: xC, y: yC + Mp * c + 15 },
        s('tspan', { class: 'lbl-big' }, 'C'), '  M\u00d7N = ' + M + '\u00d7' + N));
      ui.blocksDone = s('tspan', { 'data-testid': 'blocks-done' }, '0/' + P.nb);
      svg.appendChild(s('text', { class: 'lbl lbl-sub', x: xC, y: yC + Mp * c + 29 }, ui.blocksDone, ' blocks done'));

      // A and B, element by element
      var gA = s('g', { class: 'mat mat-a', 'aria-hidden': 'true' });
      for (var i = 0; i < M; i++) {
        for (var j = 0; j < K; j++) {
          gA.appendChild(s('rect', { class: 'cell', x: xA + j * c, y: yC + i * c, width: c, height: c },
            s('title', null, 'A[' + i + ',' + j + '] = ' + num(valA(i, j)))));
        }
      }
      var gB = s('g', { class: 'mat mat-b', 'aria-hidden': 'true' });
      for (var k = 0; k < K; k++) {
        for (var n = 0; n < N; n++) {
          gB.appendChild(s('rect', { class: 'cell', x: xC + n * c, y: yB + k * c, width: c, height: c },
            s('title', null, 'B[' + k + ',' + n + '] = ' + num(valB(k, n)))));
        }
      }
      svg.appendChild(gA);
      svg.appendChild(gB);

      // tile boundaries: block rows in A, block columns in B, K-tiles (tiled mode) in both
      var d = '';
      for (var r0 = T; r0 < M; r0 += T) d += 'M' + xA + ',' + (yC + r0 * c) + 'h' + aW;
      for (var c0 = T; c0 < N; c0 += T) d += 'M' + (xC + c0 * c) + ',' + yB + 'v' + bH;
      if (st.mode === 'tiled') {
        for (var k0 = T; k0 < K; k0 += T) {
          d += 'M' + (xA + k0 * c) + ',' + yC + 'v' + (M * c);
          d += 'M' + xC + ',' + (yB + k0 * c) + 'h' + (N * c);
        }
      }
      if (d) svg.appendChild(s('path', { class: 'tile-lines', d: d }));
      svg.appendChild(s('rect', { class: 'mat-frame', x: xA, y: yC, width: aW, height: M * c }));
      svg.appendChild(s('rect', { class: 'mat-frame', x: xC, y: yB, width: N * c, height: bH }));

      // C, block by block, as one ARIA grid (a row of blocks per blockIdx.y) with a single Tab stop:
      // the arrow keys move between blocks, Enter or Space selects one; its elements select a thread.
      // (tabindex -1: Chromium would otherwise make an SVG grid a Tab stop of its own)
      var gC = s('g', { class: 'mat mat-c', role: 'grid', tabindex: '-1', 'aria-rowcount': gy, 'aria-colcount': gx,
                        'aria-label': 'Blocks of C, ' + plural(gy, 'row') + ' of ' + plural(gx, 'block') });
      ui.grid = gC;
      ui.blocks = [];
      for (var by = 0; by < gy; by++) {
        var gRow = s('g', { role: 'row', 'aria-rowindex': by + 1 });
        gC.appendChild(gRow);
        for (var bx = 0; bx < gx; bx++) {
          var b = by * gx + bx;
          var g = s('g', { class: 'blk', tabindex: b === 0 ? '0' : '-1', role: 'gridcell', 'data-block': b,
                           'aria-colindex': bx + 1, 'aria-selected': 'false',
                           'aria-label': 'block (' + bx + ', ' + by + ')' });
          g.appendChild(s('title', null, 'block (' + bx + ', ' + by + ')'));
          for (var ty = 0; ty < T; ty++) {
            for (var tx = 0; tx < T; tx++) {
              var row = by * T + ty, col = bx * T + tx;
              var x = xC + col * c, y = yC + row * c;
              if (row < M && col < N) {
                g.appendChild(s('rect', { class: 'cell cell-c', x: x, y: y, width: c, height: c,
                                          'data-r': row, 'data-c': col }));
              } else {
                g.appendChild(s('rect', { class: 'cell idle', x: x, y: y, width: c, height: c, style: 'fill:' + url('p-idle') }));
              }
            }
          }
          g.appendChild(s('rect', { class: 'blk-frame', x: xC + bx * T * c, y: yC + by * T * c,
                                    width: T * c, height: T * c }));
          ui.blocks.push(g);
          gRow.appendChild(g);
        }
      }
      st.cursor = 0;
      svg.appendChild(gC);
      svg.appendChild(s('rect', { class: 'mat-frame', x: xC, y: yC, width: N * c, height: M * c }));
      ui.doneShown = 0;
      ui.focusShown = undefined;

      gC.addEventListener('click', function (ev) {
        var g = ev.target.closest ? ev.target.closest('.blk') : null;
        if (!g) return;
        var b = parseInt(g.getAttribute('data-block'), 10);
        var rAttr = ev.target.getAttribute('data-r');
        if (rAttr !== null) {
          var r = parseInt(rAttr, 10), cc = parseInt(ev.target.getAttribute('data-c'), 10);
          if (b === st.focus && (r !== st.row || cc !== st.col)) { st.row = r; st.col = cc; render(); return; }
          st.row = r; st.col = cc;
        }
        jumpTo(b);
      });
      gC.addEventListener('keydown', function (ev) {
        var g = ev.target.closest ? ev.target.closest('.blk') : null;
        if (!g || ev.altKey || ev.metaKey) return;
        var b = parseInt(g.getAttribute('data-block'), 10), bx = b % P.gx, by = Math.floor(b / P.gx);
        var to = null;
        if (ev.key === 'Enter' || ev.key === ' ' || ev.key === 'Spacebar') {
          ev.preventDefault();
          ev.stopPropagation();
          jumpTo(b);
          return;
        }
        if (ev.key === 'ArrowRight') to = by * P.gx + Math.min(P.gx - 1, bx + 1);
        else if (ev.key === 'ArrowLeft') to = by * P.gx + Math.max(0, bx - 1);
        else if (ev.key === 'ArrowDown') to = Math.min(P.gy - 1, by + 1) * P.gx + bx;
        else if (ev.key === 'ArrowUp') to = Math.max(0, by - 1) * P.gx + bx;
        else if (ev.key === 'Home') to = ev.ctrlKey ? 0 : by * P.gx;
        else if (ev.key === 'End') to = ev.ctrlKey ? P.nb - 1 : by * P.gx + P.gx - 1;
        else if (ev.key === 'PageUp') to = bx;
        else if (ev.key === 'PageDown') to = (P.gy - 1) * P.gx + bx;
        if (to === null) return;
        ev.preventDefault();
        ev.stopPropagation();            // the arrows move in the grid here; they do not step
        setCursor(to);
        ui.blocks[to].focus();
      });
      gC.addEventListener('focusin', function (ev) {
        var g = ev.target.closest ? ev.target.closest('.blk') : null;
        if (!g) return;
        setCursor(parseInt(g.getAttribute('data-block'), 10));
        var visible = true;
        try { visible = g.matches(':focus-visible'); } catch (e) { visible = true; }
        showFocus(visible ? st.cursor : null);
      });
      gC.addEventListener('focusout', function () { showFocus(null); });

      // overlays (drawn over the cells, never catching the pointer)
      var ov = s('g', { class: 'overlays', 'aria-hidden': 'true' });
      ui.ov = {};
      [['aStrip', 'ov-astrip', url('p-a')], ['bStrip', 'ov-bstrip', url('p-b')],
       ['aTile', 'ov-ktile', url('p-k')], ['bTile', 'ov-ktile', url('p-k')],
       ['selBlock', 'ov-selblock', null], ['selThread', 'ov-selthread', null]].forEach(function (o) {
        var rect = s('rect', { class: o[1], style: o[2] ? 'fill:' + o[2] : null, x: 0, y: 0, width: 0, height: 0 });
        ui.ov[o[0]] = rect;
        ov.appendChild(rect);
      });
      ui.ov.selThread.setAttribute('rx', c / 2);
      // the keyboard focus in the grid of C: a thick double ring, drawn over everything else
      ui.ov.focus = s('g', { class: 'ov-focus', 'data-testid': 'grid-focus', display: 'none' },
        s('rect', { class: 'ov-focus-out' }), s('rect', { class: 'ov-focus-in' }));
      ov.appendChild(ui.ov.focus);
      ui.kLabel = s('text', { class: 'lbl lbl-k', x: 0, y: 0 }, '');
      ov.appendChild(ui.kLabel);
      svg.appendChild(ov);

      ui.matrices.textContent = '';
      ui.matrices.appendChild(svg);
    }

    // Squeeze an SVG text into maxW user units if it is longer (long indices on big problems).
    function fit(el, maxW) {
      el.removeAttribute('textLength');
      el.removeAttribute('lengthAdjust');
      if (!el.textContent || typeof el.getComputedTextLength !== 'function') return;
      var w = 0;
      try { w = el.getComputedTextLength(); } catch (e) { return; }
      if (w > maxW) {
        el.setAttribute('textLength', maxW.toFixed(1));
        el.setAttribute('lengthAdjust', 'spacingAndGlyphs');
      }
    }

    function place(rect, x, y, w, hgt) {
      if (w <= 0 || hgt <= 0) { rect.setAttribute('display', 'none'); return; }
      rect.removeAttribute('display');
      rect.setAttribute('x', x); rect.setAttribute('y', y);
      rect.setAttribute('width', w); rect.setAttribute('height', hgt);
    }

    // The grid of C keeps one Tab stop (tabindex 0), on block b; every other block has -1.
    function setCursor(b) {
      if (ui.blocks[st.cursor] && st.cursor !== b) ui.blocks[st.cursor].setAttribute('tabindex', '-1');
      st.cursor = b;
      if (ui.blocks[b]) ui.blocks[b].setAttribute('tabindex', '0');
    }

    // Ring block b (null: none) as the keyboard focus.
    function showFocus(b) {
      var ring = ui.ov.focus;
      if (b === null || b === undefined) { ring.setAttribute('display', 'none'); return; }
      var L = ui.L, w = P.T * L.c, x = L.xC + (b % P.gx) * w, y = L.yC + Math.floor(b / P.gx) * w;
      var o = ring.firstChild, i = ring.lastChild;
      o.setAttribute('x', x - 1.5); o.setAttribute('y', y - 1.5);
      o.setAttribute('width', w + 3); o.setAttribute('height', w + 3);
      i.setAttribute('x', x + 1.5); i.setAttribute('y', y + 1.5);
      i.setAttribute('width', Math.max(0, w - 3)); i.setAttribute('height', Math.max(0, w - 3));
      ring.removeAttribute('display');
    }

    // ---------------------------------------------------------------- the block panel (SVG)

    function buildBlockPanel() {
      var T = P.T, W = 320;
      var G = Math.min(32 * T, 120), gc = G / T;
      var x0 = 10, y0 = 34;
      var regX = 146, regW = 166, regH = 108;
      var yCap = y0 + Math.max(G, regH) + 14;
      var yBar = yCap + 10;
      var ySh = yBar + 26 + 38;
      var H = ySh + G + 30;
      var tiled = st.mode === 'tiled';
      var svg = s('svg', { class: 'smwb-svg smwb-svg-block' + (tiled ? '' : ' naive'), role: 'group',
                           viewBox: '0 0 ' + W + ' ' + H, 'aria-label': 'The block on show: its threads, ' +
                           'the barrier, its shared-memory tiles and the followed thread\u2019s register' });
      ui.bTitle = s('text', { class: 'lbl lbl-strong', x: x0, y: 14 }, '');
      ui.bSub = s('text', { class: 'lbl lbl-sub', x: x0, y: 27 }, T * T + ' thread' + (T * T > 1 ? 's' : '') +
        ', one per element of C');
      svg.appendChild(ui.bTitle);
      svg.appendChild(ui.bSub);

      // the block's threads
      var gT = s('g', { class: 'threads', 'aria-hidden': 'true' });
      ui.threads = [];
      for (var ty = 0; ty < T; ty++) {
        for (var tx = 0; tx < T; tx++) {
          var rect = s('rect', { class: 'th', x: x0 + tx * gc, y: y0 + ty * gc, width: gc, height: gc });
          ui.threads.push(rect);
          gT.appendChild(rect);
        }
      }
      ui.thSel = s('rect', { class: 'ov-selthread', rx: gc / 2, x: 0, y: 0, width: 0, height: 0 });
      gT.appendChild(ui.thSel);
      gT.appendChild(s('rect', { class: 'blk-outline', x: x0, y: y0, width: G, height: G }));
      svg.appendChild(gT);
      ui.thCaption = s('text', { class: 'lbl lbl-sub', x: x0, y: yCap }, '');
      svg.appendChild(ui.thCaption);
      ui.thGeom = { x0: x0, y0: y0, gc: gc };

      // the followed thread's register
      var reg = s('g', { class: 'register', 'data-testid': 'register' });
      reg.appendChild(s('rect', { class: 'reg-box', x: regX, y: y0, width: regW, height: regH, rx: 6 }));
      reg.appendChild(s('text', { class: 'lbl lbl-strong', x: regX + 8, y: y0 + 15 }, 'register acc'));
      ui.regWho = s('text', { class: 'lbl lbl-sub', x: regX + 8, y: y0 + 28 }, '');
      ui.regVal = s('text', { class: 'reg-val', x: regX + 8, y: y0 + 52, 'data-testid': 'register-value' }, '');
      ui.regOp = s('text', { class: 'lbl lbl-sub', x: regX + 8, y: y0 + 70 }, '');
      ui.regOp2 = s('text', { class: 'lbl lbl-sub', x: regX + 8, y: y0 + 83 }, '');
      ui.regOut = s('text', { class: 'lbl', x: regX + 8, y: y0 + 98 }, '');
      [ui.regWho, ui.regVal, ui.regOp, ui.regOp2, ui.regOut].forEach(function (t) { reg.appendChild(t); });
      svg.appendChild(reg);

      // the barrier
      ui.barrier = s('g', { class: 'barrier', 'data-testid': 'barrier', 'data-active': 'false' },
        s('rect', { class: 'barrier-bar', x: 4, y: yBar, width: W - 8, height: 26, rx: 4 }),
        s('text', { class: 'barrier-txt', x: 12, y: yBar + 17 }, 'BARRIER'),
        s('text', { class: 'barrier-txt barrier-code', x: W - 12, y: yBar + 17, 'text-anchor': 'end' },
          '__syncthreads()'));
      svg.appendChild(ui.barrier);
      ui.barCaption = s('text', { class: 'lbl lbl-sub', x: 6, y: yBar + 40 }, '');
      svg.appendChild(ui.barCaption);

      // s_A and s_B
      function sharedGrid(name, x) {
        var g = s('g', { class: 'shared ' + name, 'data-testid': name });
        g.appendChild(s('text', { class: 'lbl', x: x, y: ySh - 6 }, s('tspan', { class: 'lbl-big' }, name),
          '  __shared__ ' + T + '\u00d7' + T));
        var cells = [], vals = [];
        for (var i = 0; i < T; i++) {
          for (var j = 0; j < T; j++) {
            var r = s('rect', { class: 'sh-cell', x: x + j * gc, y: ySh + i * gc, width: gc, height: gc });
            cells.push(r);
            g.appendChild(r);
            if (gc >= 14) {
              var t = s('text', { class: 'sh-val', x: x + (j + 0.5) * gc, y: ySh + (i + 0.5) * gc + 3.5 }, '');
              vals.push(t);
              g.appendChild(t);
            }
          }
        }
        var read = s('rect', { class: 'sh-read', x: 0, y: 0, width: 0, height: 0 });
        g.appendChild(read);
        g.appendChild(s('rect', { class: 'blk-outline', x: x, y: ySh, width: G, height: G }));
        var cap = s('text', { class: 'lbl lbl-sub', x: x, y: ySh + G + 13 }, '');
        g.appendChild(cap);
        svg.appendChild(g);
        return { g: g, cells: cells, vals: vals, read: read, cap: cap, x: x };
      }
      ui.sA = sharedGrid('s_A', x0);
      ui.sB = sharedGrid('s_B', regX + 8);
      ui.shGeom = { ySh: ySh, gc: gc, G: G, capW: regX - x0 - 6 };
      ui.regTextW = regW - 14;

      ui.blockFig.textContent = '';
      ui.blockFig.appendChild(svg);
    }

    // ---------------------------------------------------------------- rendering

    function renderReuse() {
      var T = P.T, r = data.reuse[String(T)];
      ui.rT.textContent = String(T);
      ui.rNaive.textContent = fmt(r.naive_loads_per_block);
      ui.rTiled.textContent = fmt(r.tiled_loads_per_block);
      ui.rFactor.textContent = fmt(r.reuse);
      ui.rBytes.textContent = fmt(r.shared_bytes);
      ui.rBytesFormula.textContent = '2\u00b7' + T + '\u00b2\u00b74 B';
      ui.rBytesKB.textContent = r.shared_bytes >= 1024 ? ' (' + fmt(r.shared_bytes / 1024) + ' KB)' : '';
      ui.rWhole.textContent = fmt(r.naive_global_loads) + ' naive vs ' + fmt(r.tiled_global_loads) +
        ' tiled global load requests, ' + plural(r.blocks, 'block') + ' of ' + plural(r.threads_per_block, 'thread');
      var top = 1;
      data.tiles.forEach(function (t) { top = Math.max(top, data.reuse[String(t)].reuse); });
      ui.rBars.textContent = '';
      data.tiles.forEach(function (t) {
        var rr = data.reuse[String(t)];
        var pct = Math.max(2, 100 * rr.reuse / top);
        ui.rBars.appendChild(h('div', { class: 'smwb-bar-row' + (t === T ? ' current' : ''), role: 'listitem' },
          h('span', { class: 'smwb-bar-t' }, 'T = ' + t),
          h('span', { class: 'smwb-bar-track' }, h('span', { class: 'smwb-bar', style: 'width:' + pct.toFixed(1) + '%' })),
          h('span', { class: 'smwb-bar-v' }, fmt(rr.reuse) + '\u00d7 \u00b7 ' + bytes(rr.shared_bytes))));
      });
    }

    function statusText(f, th) {
      var at = 'Block (' + f.bx + ', ' + f.by + ')';
      if (!f.step) {
        if (st.pos === 0) return 'Ready. ' + at + ' runs first: press Step forward or Play.';
        var before = blocksDone();
        return at + ' is next; ' + (before === 1 ? 'the block before it is done.' :
          'the ' + plural(before, 'block') + ' before it are done.');
      }
      var x = f.step, inBlock = th.b === f.b;
      if (x.kind === 'k') {
        var who = inBlock ? 'thread (' + th.r + ', ' + th.c + ') loads A[' + th.r + ',' + x.k0 + '] and B[' + x.k0 +
          ',' + th.c + '] from global memory' : 'each thread loads A[row,' + x.k0 + '] and B[' + x.k0 +
          ',col] from global memory';
        return at + ', k = ' + x.k0 + ': ' + who + ', multiply-adds into acc and drops them (' +
          plural(x.global, 'load request') + ' in this block).';
      }
      if (x.kind === 'write') {
        return at + ': every thread inside C stores its acc to C' + (st.mode === 'tiled' ? ' (after the last phase)' : '') +
          '; the block is done.';
      }
      var ph = at + ', phase ' + (x.phase + 1) + ' of ' + P.phases + ': ';
      var range = kRange(x.k0, x.k1);
      if (x.kind === 'load') {
        return ph + 'load the A and B tiles (' + range + ') from global memory into s_A and s_B (' +
          plural(x.global, 'load request') + '; positions outside A or B get 0).';
      }
      if (x.kind === 'compute') {
        return ph + 'compute from s_A and s_B: every thread multiply-adds its row of s_A with its column of s_B (' +
          plural(x.shared, 'shared read') + ' in this block).';
      }
      if (x.kind === 'sync') {
        var first = f.si % 4 === 1;
        var one = P.T * P.T === 1;
        return ph + '__syncthreads(): ' + (one ? 'the block\u2019s one thread waits ' : 'every thread waits ') +
          (first ? 'until both tiles are complete in shared memory.'
                 : (one ? 'until it has' : 'until all have') + ' finished reading, so that no tile is ' +
                   'overwritten while still in use.');
      }
      return at + '.';
    }

    function renderMatrices(f, th) {
      var L = ui.L, c = L.c, T = P.T, ov = ui.ov;
      var tiled = st.mode === 'tiled';
      var rows0 = f.by * T, rows1 = Math.min(M, rows0 + T), cols0 = f.bx * T, cols1 = Math.min(N, cols0 + T);
      if (tiled) {
        place(ov.aStrip, L.xA, L.yC + rows0 * c, K * c, (rows1 - rows0) * c);
        place(ov.bStrip, L.xC + cols0 * c, L.yB, (cols1 - cols0) * c, K * c);
      } else {
        place(ov.aStrip, L.xA, L.yC + th.r * c, K * c, c);
        place(ov.bStrip, L.xC + th.c * c, L.yB, c, K * c);
      }
      var x = f.step, active = x && (x.kind === 'k' || x.kind === 'load' || x.kind === 'sync' || x.kind === 'compute');
      if (active) {
        var k0 = x.k0, k1 = Math.min(x.k1, K);
        place(ov.aTile, L.xA + k0 * c, L.yC + rows0 * c, (k1 - k0) * c, (rows1 - rows0) * c);
        place(ov.bTile, L.xC + cols0 * c, L.yB + k0 * c, (cols1 - cols0) * c, (k1 - k0) * c);
        ui.kLabel.removeAttribute('display');
        ui.kLabel.setAttribute('x', L.xA + (k0 + (k1 - k0) / 2) * c);
        ui.kLabel.setAttribute('y', L.yC - 2);
        ui.kLabel.setAttribute('text-anchor', 'middle');
        ui.kLabel.textContent = x.kind === 'k' ? 'k=' + k0 : 'k-tile';
      } else {
        place(ov.aTile, 0, 0, 0, 0);
        place(ov.bTile, 0, 0, 0, 0);
        ui.kLabel.setAttribute('display', 'none');
      }
      place(ov.selBlock, L.xC + cols0 * c, L.yC + rows0 * c, T * c, T * c);
      place(ov.selThread, L.xC + th.c * c + c * 0.12, L.yC + th.r * c + c * 0.12, c * 0.76, c * 0.76);

      var done = blocksDone();
      var lo = Math.min(done, ui.doneShown), hi = Math.max(done, ui.doneShown);
      for (var b = lo; b < hi; b++) ui.blocks[b].classList.toggle('done', b < done);
      ui.doneShown = done;
      if (ui.focusShown !== f.b) {
        var old = ui.focusShown !== undefined ? ui.blocks[ui.focusShown] : null;
        if (old) { old.classList.remove('focus'); old.setAttribute('aria-selected', 'false'); }
        ui.blocks[f.b].classList.add('focus');
        ui.blocks[f.b].setAttribute('aria-selected', 'true');
        ui.focusShown = f.b;
      }
      // Tab into the grid lands on the block on show, unless the keyboard is in the grid already
      if (!ui.grid.contains(document.activeElement)) setCursor(f.b);
      ui.blocksDone.textContent = done + '/' + P.nb;
    }

    function renderBlockPanel(f, th) {
      var T = P.T, tiled = st.mode === 'tiled', x = f.step, kind = x ? x.kind : null;
      var inBlock = th.b === f.b;
      ui.bTitle.textContent = 'Block (' + f.bx + ', ' + f.by + ')  \u00b7  blockIdx.x = ' + f.bx + ', blockIdx.y = ' + f.by;
      fit(ui.bTitle, 300);

      // threads
      var live = 0;
      ui.threads.forEach(function (rect, idx) {
        var ty = Math.floor(idx / T), tx = idx % T;
        var inside = f.by * T + ty < M && f.bx * T + tx < N;
        if (inside) live++;
        var cls = 'th';
        if (!inside) cls += ' idle';
        var state = '';
        if (kind === 'k') state = inside ? 'load' : '';
        else if (kind === 'load') state = x.tg && x.tg[idx] > 0 ? 'load' : '';
        else if (kind === 'sync') state = 'wait';
        else if (kind === 'compute') state = 'compute';
        else if (kind === 'write') state = inside ? 'write' : '';
        if (state) cls += ' th-' + state;
        rect.setAttribute('class', cls);
        if (!inside) rect.style.fill = url('p-idle');
        else if (state === 'wait') rect.style.fill = url('p-wait');
        else rect.style.fill = '';
      });
      var gm = ui.thGeom;
      if (inBlock) place(ui.thSel, gm.x0 + th.tx * gm.gc + gm.gc * 0.12, gm.y0 + th.ty * gm.gc + gm.gc * 0.12,
                         gm.gc * 0.76, gm.gc * 0.76);
      else place(ui.thSel, 0, 0, 0, 0);
      var idle = T * T - live;
      var cap = {
        k: 'loading A and B from global memory',
        load: 'copying one element of A and one of B each',
        sync: T * T === 1 ? 'its one thread waits at the barrier' : 'all ' + T * T + ' wait at the barrier',
        compute: 'reading s_A and s_B',
        write: 'storing acc to C'
      }[kind] || (f.j >= f.t.n ? 'finished' : 'not started');
      ui.thCaption.textContent = cap + (idle ? ' \u00b7 ' + idle + ' idle' : '');
      fit(ui.thCaption, 300);

      // barrier
      var on = kind === 'sync';
      ui.barrier.setAttribute('data-active', on ? 'true' : 'false');
      ui.barrier.setAttribute('class', 'barrier' + (on ? ' on' : '') + (tiled ? '' : ' unused'));
      ui.barrier.firstChild.setAttribute('class', 'barrier-bar' + (on ? ' on' : ''));
      ui.barCaption.textContent = !tiled ? 'the naive kernel has no barrier' :
        on ? (f.si % 4 === 1 ? 'waiting: the tiles must be complete before anyone reads them'
                             : 'waiting: everyone must finish reading before the next load')
           : 'two barriers per phase: after the load and after the compute';
      fit(ui.barCaption, 306);

      // s_A and s_B: the last tile loaded in this block
      var tile = null;
      if (tiled) {
        for (var i = f.j - 1; i >= 0; i--) {
          if (f.t.steps[i].kind === 'load') { tile = f.t.steps[i]; break; }
        }
      }
      [ui.sA, ui.sB].forEach(function (sh, which) {
        var pads = 0;
        sh.cells.forEach(function (rect, idx) {
          var i = Math.floor(idx / T), j = idx % T, cls = 'sh-cell', v = null;
          if (!tiled) cls += ' unused';
          else if (tile) {
            var row, col, ok;
            if (which === 0) { row = f.by * T + i; col = tile.k0 + j; ok = row < M && col < K; v = ok ? valA(row, col) : 0; }
            else { row = tile.k0 + i; col = f.bx * T + j; ok = row < K && col < N; v = ok ? valB(row, col) : 0; }
            cls += ok ? ' staged' : ' pad';
            if (!ok) pads++;
          }
          rect.setAttribute('class', cls);
          rect.style.fill = cls.indexOf('pad') >= 0 ? url('p-pad') : '';
          if (sh.vals.length) sh.vals[idx].textContent = v === null ? '' : num(v);
        });
        sh.g.setAttribute('data-staged', tile ? 'true' : 'false');
        var gm2 = ui.shGeom;
        if (tiled && tile && inBlock && (kind === 'compute')) {
          if (which === 0) place(sh.read, sh.x, gm2.ySh + th.ty * gm2.gc, gm2.G, gm2.gc);
          else place(sh.read, sh.x + th.tx * gm2.gc, gm2.ySh, gm2.gc, gm2.G);
        } else place(sh.read, 0, 0, 0, 0);
        sh.cap.textContent = !tiled ? 'not used (naive)' :
          tile ? kRange(tile.k0, tile.k1) + (pads ? ' \u00b7 ' + pads + ' padded with 0' : '') :
          'empty until the first load';
        fit(sh.cap, ui.shGeom.capW);
      });

      // register
      ui.regWho.textContent = 'row ' + th.r + ', col ' + th.c + ' \u00b7 block (' + th.bx + ', ' + th.by + ')';
      ui.regVal.textContent = 'acc = ' + num(th.acc);
      ui.regOp.textContent = ''; ui.regOp2.textContent = '';
      if (th.last) {
        var ls = th.last.step;
        if (ls.kind === 'k') {
          ui.regOp.textContent = 'last: + A[' + th.r + ',' + ls.k0 + ']\u00b7B[' + ls.k0 + ',' + th.c + ']';
          ui.regOp2.textContent = '= ' + par(valA(th.r, ls.k0)) + '\u00b7' + par(valB(ls.k0, th.c)) + ' = ' +
            num(th.last.delta) + ' (k = ' + ls.k0 + ')';
        } else {
          ui.regOp.textContent = 'last: + \u03a3 s_A[' + th.ty + '][j]\u00b7s_B[j][' + th.tx + ']';
          ui.regOp2.textContent = '= ' + num(th.last.delta) + ' (' + kRange(ls.k0, ls.k1) + ')';
        }
      }
      if (th.j === 0) ui.regOp.textContent = 'its block has not started';
      if (th.done) ui.regOut.textContent = 'C[' + th.r + ',' + th.c + '] = ' + num(th.acc) + ' \u2714 written';
      else ui.regOut.textContent = 'C[' + th.r + ',' + th.c + '] will be ' + num(th.full);
      [ui.regWho, ui.regOp, ui.regOp2, ui.regOut].forEach(function (el) { fit(el, ui.regTextW); });
      ui.regVal.parentNode.setAttribute('data-state', th.done ? 'written' : th.j ? 'running' : 'idle');
    }

    function renderNote() {
      ui.note.textContent = '';
      if (st.mode === 'naive') {
        ui.note.appendChild(h('p', null, h('strong', null, 'Naive: every thread walks global memory. '),
          'There is no ', code('__shared__'), ' array. Thread (ty, tx) of block (bx, by) owns one element of C and ' +
          'reads its whole row of A and column of B itself: each value goes from global memory into that ' +
          'thread\u2019s register, serves one multiply-add, and is dropped. The neighbours in the same row of C ' +
          'fetch the same A values again. The counts are load requests per thread.'));
      } else {
        ui.note.appendChild(h('p', null, h('strong', null, 'Tiled: load \u2192 sync \u2192 compute \u2192 sync. '),
          'In each phase the block\u2019s threads fetch a ' + P.T + '\u00d7' + P.T + ' tile of A and of B once, one ' +
          'element of each per thread, into ', code('s_A'), ' and ', code('s_B'), '. After ', code('__syncthreads()'),
          ' every thread reads its row of s_A and its column of s_B from shared memory, so a value fetched from ' +
          'global memory serves ' + plural(P.T, 'thread') + '. The second barrier keeps the next load from overwriting ' +
          'tiles that others still read.'));
      }
    }

    function render() {
      var f = focusState(), th = threadState(), tot = launchTotals();
      var tiled = st.mode === 'tiled';
      container.setAttribute('data-mode', st.mode);
      ui.mode_naive.checked = !tiled;
      ui.mode_tiled.checked = tiled;
      if (ui.tile.value !== String(st.T)) ui.tile.value = String(st.T);
      if (document.activeElement !== ui.rowIn) ui.rowIn.value = String(st.row);
      if (document.activeElement !== ui.colIn) ui.colIn.value = String(st.col);

      ui.step.textContent = fmt(st.pos) + '/' + fmt(P.total);
      ui.gLoads.textContent = fmt(tot.g);
      ui.sLoads.textContent = fmt(tot.s);
      ui.tG.textContent = fmt(th.g);
      ui.tS.textContent = fmt(th.sh);
      ui.tWho.textContent = '(row ' + th.r + ', col ' + th.c + ')';
      ui.sharedUse.textContent = tiled ? '' : 'The naive kernel never uses it.';

      ui.play.setAttribute('aria-pressed', st.playing ? 'true' : 'false');
      ui.play.setAttribute('aria-label', st.playing ? 'Pause' : 'Play');
      ui.play.setAttribute('title', st.playing ? 'Pause' : 'Play');
      ui.play.textContent = st.playing ? '\u275a\u275a Pause' : '\u25b6 Play';
      ui.back.disabled = st.pos === 0;
      ui.forward.disabled = st.pos >= P.total;
      var said = statusText(f, th);
      ui.status.textContent = said;
      if (!st.playing) {                      // the live region: quiet while Play runs
        said = st.note ? st.note + ' ' + said : said;
        st.note = '';
        if (said !== st.said) { ui.announce.textContent = said; st.said = said; }
      }

      renderMatrices(f, th);
      renderBlockPanel(f, th);
      if (ui.noteMode !== st.mode + P.T) { renderNote(); ui.noteMode = st.mode + P.T; }
    }

    // ---------------------------------------------------------------- keyboard

    container.addEventListener('keydown', function (ev) {
      if (ev.defaultPrevented || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      var tag = (ev.target.tagName || '').toLowerCase();
      if (tag === 'input' || tag === 'select' || tag === 'textarea' || ev.target.isContentEditable) return;
      var onControl = tag === 'button' || (ev.target.getAttribute && ev.target.getAttribute('role') === 'button');
      if (ev.key === 'ArrowRight') { ev.preventDefault(); forward(); }
      else if (ev.key === 'ArrowLeft') { ev.preventDefault(); back(); }
      else if (ev.key === 'p' || ev.key === 'P') { ev.preventDefault(); togglePlay(); }
      else if ((ev.key === ' ' || ev.key === 'Spacebar') && !onControl) { ev.preventDefault(); togglePlay(); }
    });

    // ---------------------------------------------------------------- go

    var known = data.tiles.indexOf(st.T) >= 0 ? st.T : data.tiles[0];
    st.T = known;
    rebuild();
    return { container: container };
  }

  window.SMWorkbench = { mount: mount, version: 1 };
})();
