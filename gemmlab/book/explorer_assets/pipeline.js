/* The Pipeline Explorer. gemmlab/book/pipeline_explorer.py plays every schedule the page offers with the protocol
   model the CPU tests play (gemmlab.models.pipeline) and hands the traces over as data; this script only draws a
   trace's rows, cycle by cycle. No network, no libraries. */
(function () {
  "use strict";
  if (window.PipelineExplorer) return;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function kib(bytes) { return (bytes / 1024).toLocaleString("en-US") + " KiB"; }

  var FAULTS = [["none", "none: the kernel as written"],
                ["expect_tx", "expect_tx 16 bytes too many"],
                ["parity", "a wait on the wrong parity"],
                ["no_turns", "ping-pong without its turns"]];

  // A group of radio buttons as a fieldset: native controls, so the keyboard (Tab, arrows, Space) works.
  function radios(box, name, legend, options) {
    var set = el("fieldset", {"class": "ppx-choice"});
    set.appendChild(el("legend", {}, legend));
    var inputs = {};
    options.forEach(function (o) {
      var id = box.id + "-" + name + "-" + o[0];
      var label = el("label", {"for": id});
      var input = el("input", {type: "radio", name: box.id + "-" + name, id: id, value: o[0], "data-ppx": name});
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + o[1]));
      set.appendChild(label);
      inputs[o[0]] = input;
    });
    return {set: set, inputs: inputs};
  }

  function select(box, name, label, values) {
    var row = el("div", {"class": "ppx-select"});
    var id = box.id + "-" + name;
    row.appendChild(el("label", {"for": id}, label));
    var s = el("select", {id: id, "data-ppx": name});
    values.forEach(function (v) { s.appendChild(el("option", {value: String(v)}, String(v))); });
    row.appendChild(s);
    return {row: row, select: s};
  }

  function button(text, name, label) {
    return el("button", {type: "button", "class": "ppx-button", "data-ppx": name, "aria-label": label}, text);
  }

  function mount(box, data) {
    var S = data.strings;
    var state = {stages: 4, consumers: 2, schedule: "cooperative", fault: "none", cycle: 0, timer: null};
    var dflt = data.default.split("-");
    state.stages = +dflt[0].slice(1); state.consumers = +dflt[1].slice(1); state.schedule = dflt[2];

    box.appendChild(el("p", {"class": "ppx-intro"},
      "One block of a chapter 9 kernel, cycle by cycle: a producer thread asks TMA for each K-tile, consumer " +
      "warpgroups multiply it with wgmma and release the stage. Choose the ring and the schedule, inject a " +
      "fault, then step."));

    var controls = el("div", {"class": "ppx-controls"});
    var stages = select(box, "stages", "Stages in the ring", data.stages);
    var consumers = select(box, "consumers", "Consumer warpgroups", [1, 2]);
    var schedule = radios(box, "schedule", "Schedule", [["cooperative", "cooperative"], ["pingpong", "ping-pong"]]);
    var fault = radios(box, "fault", "Fault", FAULTS);
    controls.appendChild(stages.row);
    controls.appendChild(consumers.row);
    controls.appendChild(schedule.set);
    controls.appendChild(fault.set);
    box.appendChild(controls);

    var transport = el("div", {"class": "ppx-transport"});
    var reset = button("Reset", "reset", "Back to cycle 0");
    var back = button("◀ Step", "back", "One cycle back");
    var step = button("Step ▶", "step", "One cycle on");
    var play = button("Play", "play", "Play the cycles");
    var slider = el("input", {type: "range", min: "0", value: "0", "data-ppx": "cycle", "aria-label": "Cycle"});
    var where = el("span", {"class": "ppx-where", "aria-live": "polite"});
    [reset, back, step, play, slider, where].forEach(function (e) { transport.appendChild(e); });
    box.appendChild(transport);

    var status = el("p", {"class": "ppx-status", "data-ppx": "status", role: "status"});
    box.appendChild(status);
    var agents = el("div", {"class": "ppx-agents", "data-ppx": "agents"});
    box.appendChild(agents);
    var ring = el("div", {"class": "ppx-ring", "data-ppx": "ring"});
    box.appendChild(ring);
    var turns = el("div", {"class": "ppx-turns", "data-ppx": "turns"});
    box.appendChild(turns);
    var events = el("div", {"class": "ppx-events"});
    events.appendChild(el("h4", {}, "This cycle, the engines"));
    var eventList = el("ul", {"data-ppx": "events"});
    events.appendChild(eventList);
    box.appendChild(events);

    function trace() {
      return data.traces["s" + state.stages + "-c" + state.consumers + "-" + state.schedule + "-" + state.fault];
    }

    function sync() {
      // The combinations the model offers: ping-pong takes two consumers; only ping-pong has turns to leave out.
      if (state.schedule === "pingpong") state.consumers = 2;
      if (state.fault === "no_turns" && state.schedule !== "pingpong") state.fault = "none";
      stages.select.value = String(state.stages);
      consumers.select.value = String(state.consumers);
      consumers.select.querySelector('option[value="1"]').disabled = state.schedule === "pingpong";
      schedule.inputs[state.schedule].checked = true;
      fault.inputs.no_turns.disabled = state.schedule !== "pingpong";
      fault.inputs[state.fault].checked = true;
    }

    // A barrier's phase under way (the phases before it have completed), and what it still waits for.
    function barrierText(name, b, withTx) {
      var t = name + ": phase " + b[0] + " (parity " + (b[0] & 1) + ") under way, " + b[1] + " arrival" +
              (b[1] === 1 ? "" : "s");
      if (withTx) t += " and " + b[2].toLocaleString("en-US") + " bytes";
      return t + " to come";
    }

    function render() {
      var t = trace(), rows = t.rows, last = rows.length - 1;
      state.cycle = Math.max(0, Math.min(state.cycle, last));
      var row = rows[state.cycle];
      slider.max = String(last);
      slider.value = String(state.cycle);
      where.textContent = "cycle " + state.cycle + " of " + last;
      back.disabled = reset.disabled = state.cycle === 0;
      step.disabled = state.cycle === last;

      var error = row[6] !== null ? S[row[6]] : null;
      status.className = "ppx-status";
      if (error) {
        status.textContent = (error.indexOf("hang") === 0 ? "Hangs: " : "Goes wrong: ") + error;
        status.classList.add("ppx-bad");
      } else if (state.cycle === last && !t.error) {
        status.textContent = "Done: " + t.stored.length + " tile results stored, every wait on its own phase.";
        status.classList.add("ppx-good");
      } else {
        status.textContent = "Running" + (t.error ? " (this configuration goes wrong at cycle " + last + ")" : "") + ".";
      }

      agents.textContent = "";
      t.agents.forEach(function (a, i) {
        var text = S[row[0][i]];
        var lane = el("div", {"class": "ppx-agent", "data-agent": S[a]});
        lane.appendChild(el("strong", {}, S[a]));
        lane.appendChild(el("span", {"data-ppx": "did"}, text));
        lane.classList.add(text === "done" ? "ppx-done" : text.indexOf("waits on") === 0 ? "ppx-waiting" : "ppx-acting");
        agents.appendChild(lane);
      });

      ring.textContent = "";
      var total = data.stage_bytes[0] + data.stage_bytes[1];
      row[5].forEach(function (st, s) {
        var card = el("div", {"class": "ppx-stage", "data-stage": String(s)});
        card.appendChild(el("h4", {}, "Stage " + s));
        var held = st[0] === null ? "empty" : "K-tile " + st[0] + ": " + kib(st[1]) + " of " + kib(total);
        card.appendChild(el("p", {"class": "ppx-held"}, held));
        var bar = el("div", {"class": "ppx-bar", role: "img", "aria-label": held});
        var fill = el("div", {"class": "ppx-fill"});
        fill.style.width = (st[0] === null ? 0 : 100 * st[1] / total) + "%";
        bar.appendChild(fill);
        card.appendChild(bar);
        card.appendChild(el("p", {"class": "ppx-barrier"}, barrierText("full", row[2][s], true)));
        card.appendChild(el("p", {"class": "ppx-barrier"}, barrierText("empty", row[3][s], false)));
        ring.appendChild(card);
      });

      turns.textContent = "";
      row[4].forEach(function (b, c) { turns.appendChild(el("p", {}, barrierText("turn[" + c + "]", b, false))); });
      turns.hidden = row[4].length === 0;

      eventList.textContent = "";
      if (!row[1].length) eventList.appendChild(el("li", {"class": "ppx-none"}, "nothing completes"));
      row[1].forEach(function (e) { eventList.appendChild(el("li", {}, S[e])); });
    }

    function stop() {
      if (state.timer) { clearInterval(state.timer); state.timer = null; }
      play.textContent = "Play";
      play.setAttribute("aria-pressed", "false");
    }

    function choose() { stop(); state.cycle = 0; sync(); render(); }

    stages.select.addEventListener("change", function () { state.stages = +stages.select.value; choose(); });
    consumers.select.addEventListener("change", function () { state.consumers = +consumers.select.value; choose(); });
    Object.keys(schedule.inputs).forEach(function (k) {
      schedule.inputs[k].addEventListener("change", function () { state.schedule = k; choose(); });
    });
    Object.keys(fault.inputs).forEach(function (k) {
      fault.inputs[k].addEventListener("change", function () { state.fault = k; choose(); });
    });
    reset.addEventListener("click", function () { stop(); state.cycle = 0; render(); });
    back.addEventListener("click", function () { stop(); state.cycle -= 1; render(); });
    step.addEventListener("click", function () { stop(); state.cycle += 1; render(); });
    slider.addEventListener("input", function () { stop(); state.cycle = +slider.value; render(); });
    play.addEventListener("click", function () {
      if (state.timer) { stop(); return; }
      if (state.cycle >= trace().rows.length - 1) state.cycle = 0;
      play.textContent = "Pause";
      play.setAttribute("aria-pressed", "true");
      state.timer = setInterval(function () {
        if (state.cycle >= trace().rows.length - 1) { stop(); return; }
        state.cycle += 1;
        render();
      }, 400);
    });

    sync();
    render();
  }

  window.PipelineExplorer = {mount: mount};
})();
