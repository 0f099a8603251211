"""The viewer's page: the cameras live, the run state, and the sim's own buttons.

Frames come from ``/frames`` (MJPEG) read with ``fetch``: each part is drawn on a canvas as
soon as it is whole, and while one is being decoded only the newest that arrived meanwhile
is kept, so a slow browser skips frames instead of lagging. Nothing on the page changes
unless the sim does (no wall clock, no counters of its own), so a paused sim's page is still.
"""
from __future__ import annotations

import html

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>robogym viewer: __TITLE__</title>
<style>
 body { font: 14px system-ui, sans-serif; margin: 12px; background: #f4f4f4; color: #222; }
 #wrap { display: inline-block; }
 #view { display: block; background: #000; max-width: 100%; }
 #cams { display: flex; } #cams span { flex: 1; text-align: center; color: #555; }
 #state { margin: 8px 0; font-variant-numeric: tabular-nums; }
 #run.paused { color: #a60; } #run.running { color: #070; } #run.absent { color: #b00; }
 button { font-size: 14px; margin-right: 6px; padding: 4px 12px; }
 #answer { margin-top: 6px; color: #444; min-height: 1.2em; }
</style></head>
<body>
<h3>robogym viewer: __TITLE__</h3>
<div id="wrap"><canvas id="view" width="960" height="240"></canvas>
<div id="cams"></div></div>
<div id="state"><b id="run">waiting for the sim</b> &middot; sim time <span id="time">-</span> s
 &middot; real-time factor <span id="rtf">-</span> &middot; late steps <span id="late">-</span>
 &middot; frame of tick <span id="frame">-</span></div>
<div><button id="pause">Pause</button><button id="resume">Resume</button><button id="step">Step</button>
<button id="reset">Reset</button></div>
<div id="answer"></div>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token");
const query = token ? "?token=" + encodeURIComponent(token) : "";
const canvas = document.getElementById("view"), ctx = canvas.getContext("2d");
const $ = (id) => document.getElementById(id);
let dtNs = 0, pending = null, drawing = false, shown = 0;

function showState(s) {
  const run = $("run");
  run.textContent = !s.sim_present ? "no sim" : s.paused === null ? "unknown" : s.paused ? "paused" : "running";
  run.className = !s.sim_present ? "absent" : s.paused ? "paused" : "running";
  $("time").textContent = s.sim_time_s === null ? "-" : s.sim_time_s.toFixed(2);
  $("rtf").textContent = s.real_time_factor === null ? "-" : s.real_time_factor.toFixed(2);
  $("late").textContent = s.late_steps === null ? "-" : s.late_steps;
  dtNs = s.control_dt_ns || 0;
  const cams = $("cams");
  if (cams.dataset.names !== s.cameras.join(",")) {
    cams.dataset.names = s.cameras.join(",");
    cams.replaceChildren(...s.cameras.map((c) => {
      const e = document.createElement("span"); e.textContent = c; return e;
    }));
  }
}

async function draw() {  // the newest whole frame; frames that came meanwhile are skipped
  if (drawing) return;
  drawing = true;
  while (pending) {
    const part = pending; pending = null;
    try {
      const bitmap = await createImageBitmap(new Blob([part.data], {type: "image/jpeg"}));
      if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
        canvas.width = bitmap.width; canvas.height = bitmap.height;
      }
      ctx.drawImage(bitmap, 0, 0);
      bitmap.close();
      shown += 1;
      $("frame").textContent = dtNs ? String(part.stamp / BigInt(dtNs)) : "-";
      document.body.dataset.framesShown = shown;
      document.body.dataset.frameStamp = String(part.stamp);
    } catch (e) { $("answer").textContent = "a frame could not be decoded: " + e; }
  }
  drawing = false;
}

function findHeaderEnd(buf) {
  for (let i = 0; i + 3 < buf.length; i++)
    if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i;
  return -1;
}

async function frames() {
  const decoder = new TextDecoder();
  for (;;) {
    try {
      const response = await fetch("/frames" + query, {cache: "no-store"});
      if (!response.ok) throw new Error("HTTP " + response.status);
      const reader = response.body.getReader();
      let buf = new Uint8Array(0);
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        const joined = new Uint8Array(buf.length + value.length);
        joined.set(buf); joined.set(value, buf.length); buf = joined;
        for (;;) {
          const end = findHeaderEnd(buf);
          if (end < 0) break;
          const head = decoder.decode(buf.subarray(0, end));
          const length = Number((/content-length:\\s*(\\d+)/i.exec(head) || [])[1]);
          const stamp = BigInt((/x-stamp-ns:\\s*(\\d+)/i.exec(head) || [0, 0])[1]);
          if (!Number.isFinite(length)) { buf = buf.subarray(end + 4); continue; }
          if (buf.length < end + 4 + length) break;
          pending = {data: buf.slice(end + 4, end + 4 + length), stamp: stamp};
          buf = buf.subarray(end + 4 + length);
          draw();
        }
      }
    } catch (e) { /* the viewer or the network went away: try again */ }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

for (const name of ["pause", "resume", "step", "reset"]) {
  $(name).addEventListener("click", async () => {
    try {
      const r = await (await fetch("/control/" + name + query,
          {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"})).json();
      $("answer").textContent = name + ": " + (r.ok ? "" : "refused: ") + r.message;
    } catch (e) { $("answer").textContent = name + ": no answer (" + e + ")"; }
  });
}
new EventSource("/events" + query).onmessage = (e) => showState(JSON.parse(e.data));
frames();
</script></body></html>
"""


def page(title: str) -> str:
    return _PAGE.replace("__TITLE__", html.escape(title))
