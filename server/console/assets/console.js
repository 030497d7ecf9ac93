// zkd console: a small single-page app over /console/api/. No framework:
// pages are built with h() from the API's JSON, text only (never HTML from
// the server), and refreshed by polling while they are shown.
"use strict";

const main = document.getElementById("main");
let timer = null; // the current page's refresh timer
let generation = 0; // bumped on every navigation: late answers are dropped

// h makes an element: h("td", {class: "x"}, "text", child, …).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

async function api(name, params) {
  const q = new URLSearchParams(params || {}).toString();
  const res = await fetch("api/" + name + (q ? "?" + q : ""), { cache: "no-store" });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

function stamp() {
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
}

function ago(ms) {
  if (ms < 1000) return ms + " ms";
  const s = ms / 1000;
  if (s < 120) return s.toFixed(1) + " s";
  if (s < 7200) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(1) + " h";
}

function kv(rows) {
  return h("table", { class: "kv" }, rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", { class: "mono" }, v))));
}

function banner(kind, text) {
  return h("div", { class: "banner " + kind }, text);
}

// render replaces the page body, unless a newer navigation started.
function render(gen, ...nodes) {
  if (gen !== generation) return;
  main.replaceChildren(...nodes);
  stamp();
}

function every(ms, f) {
  f();
  timer = setInterval(f, ms);
}

// --- Ensemble -------------------------------------------------------------

async function ensemblePage(gen) {
  every(2000, async () => {
    let e;
    try { e = await api("ensemble"); } catch (err) { return render(gen, banner("bad", err.message)); }
    const out = [h("h2", {}, "This member")];
    if (e.problem) out.push(banner("bad", e.problem));
    else out.push(banner("ok", "serving clients as " + e.mode));
    out.push(kv([["mode", e.mode], ["serving", String(e.serving)], ["applied zxid", e.zxid],
      ["leader", e.leader ? (e.leader.leader_id !== undefined ? "server " + e.leader.leader_id + " (" + (e.leader.leader_ip || "") + ")" : "none known") : "standalone"]]));
    const rep = e.replication && e.replication.known ? e.replication : null;
    if (e.members || rep) {
      const me = e.zab ? String(e.zab.myid) : "";
      const leader = e.leader && e.leader.leader_id !== undefined ? String(e.leader.leader_id) : "";
      const byId = {};
      for (const id of Object.keys(e.members || {})) byId[id] = { id: id, address: e.members[id] };
      for (const m of rep ? rep.members : []) byId[String(m.id)] = Object.assign(byId[String(m.id)] || { id: String(m.id) }, { p: m });
      if (!rep && byId[me]) {
        // No leader's table: this member's own row from its own figures.
        byId[me].p = { known: true, zxid: e.zxid, applied_index: e.raft ? e.raft.applied_index : "?", lag: "?",
          ready: false, in_touch: false, serving: e.serving, leader: false, report_age_ms: 0, self: true };
      }
      const cell = (m, f) => m.p && m.p.known ? f(m.p) : "?";
      out.push(h("h2", {}, "Members"));
      out.push(h("table", { id: "members" },
        h("tr", {}, ["id", "address", "role", "applied zxid", "applied index", "lag (entries)", "ready", "last report"].map(t => h("th", {}, t))),
        Object.values(byId).sort((a, b) => a.id - b.id).map(m => h("tr", { "data-member": m.id },
          h("td", {}, m.id + (m.id === me ? " (this member)" : "")),
          h("td", { class: "mono" }, m.address || "observer"),
          h("td", {}, m.id === leader ? "leader" : (m.p && m.p.observer ? "observer" : "follower")),
          h("td", { class: "mono", "data-col": "zxid" }, cell(m, p => p.zxid)),
          h("td", { class: "mono" }, cell(m, p => p.applied_index)),
          h("td", { class: "mono", "data-col": "lag" }, cell(m, p => p.lag)),
          h("td", { "data-col": "ready", class: m.p && m.p.ready ? "ok" : "badtext" }, m.p ? (m.p.ready ? "ready" : (!m.p.known ? "never reported" : !m.p.in_touch ? "not in touch" : !m.p.serving ? "not serving" : "catching up")) : "unknown"),
          h("td", {}, cell(m, p => p.self ? "its own figures" : p.leader ? "leader" : ago(p.report_age_ms) + " ago"))))));
      out.push(h("p", { class: "muted" }, rep
        ? "As the leader (server " + rep.leader_id + ") knows it: commit index " + rep.commit_index + (rep.age_ms ? ", its table " + ago(rep.age_ms) + " old" : "") + ". Lag is the leader's commit index minus the member's applied index; ready means in touch, serving, and within the synced lag."
        : "The leader's view of each member's progress is not available here: this member is not in touch with a leader."));
    }
    if (e.raft) {
      const r = e.raft;
      out.push(h("h2", {}, "Raft and disk"));
      out.push(kv([["term", r.term], ["last log index", r.last_log_index], ["commit index", r.commit_index],
        ["applied index", r.applied_index], ["apply lag (entries)", r.apply_lag], ["last fsync", r.last_fsync_ms + " ms"],
        ["last commit", r.last_commit_ms + " ms"], ["disk use", (r.disk_bytes / 1048576).toFixed(1) + " MiB"],
        ["log entries", r.log_entries], ["snapshots", r.snapshots + (r.snapshots ? ", newest " + ago(r.last_snapshot_age_s * 1000) + " old" : "")]]));
    }
    if (Object.keys(e.health).length) {
      out.push(h("h2", {}, "Health (mntr)"));
      out.push(kv(Object.entries(e.health)));
    }
    out.push(h("h2", {}, "Elections"));
    out.push(h("p", { class: "muted", id: "elections-since" }, "Elections this member saw since " + new Date(e.elections_since).toLocaleString() +
      " (kept across its restarts in its data directory; while it is down it sees none); earlier ones are not known." + (e.raft && e.mode !== "standalone" ? " Raft term " + e.raft.term + ": the ensemble began at term 1 and every election starts a term, so it has held " + Math.max(e.raft.term - 1, 0) + " (counting any that chose no leader) since it began." : "")));
    out.push(e.elections.length ? h("table", {}, h("tr", {}, h("th", {}, "ended"), h("th", {}, "duration")),
      e.elections.slice().reverse().map(x => h("tr", {}, h("td", {}, new Date(x.at).toLocaleString()), h("td", {}, x.duration_ms.toFixed(0) + " ms" + (x.count > 1 ? " (mean of " + x.count + " elections between two samples)" : "")))))
      : h("p", { class: "muted" }, "none since then"));
    render(gen, ...out);
  });
}

// --- Sessions -------------------------------------------------------------

const sessionState = { sort: "id", order: "asc", offset: 0, limit: 100 };

async function sessionsPage(gen) {
  const cols = [["id", "session"], ["remote", "remote address"], ["timeout", "timeout"], ["heard", "last heard"],
    ["ephemerals", "ephemerals"], ["watches", "watches"]];
  every(2000, async () => {
    let d;
    try { d = await api("sessions", sessionState); } catch (err) { return render(gen, banner("bad", err.message)); }
    const head = h("tr", {}, cols.map(([key, title]) => h("th", {
      class: "sort" + (sessionState.sort === key ? " sorted " + sessionState.order : ""), "data-sort": key,
      onclick: () => {
        if (sessionState.sort === key) sessionState.order = sessionState.order === "asc" ? "desc" : "asc";
        else Object.assign(sessionState, { sort: key, order: "asc" });
        navigate();
      },
    }, title)));
    const rows = d.sessions.map(s => h("tr", { "data-session": s.id }, h("td", { class: "mono" }, s.id), h("td", { class: "mono" }, s.remote),
      h("td", {}, s.timeout_ms + " ms"), h("td", {}, ago(s.heard_ms_ago) + " ago"), h("td", {}, s.ephemerals), h("td", {}, s.watches)));
    const pager = h("p", {},
      h("button", { disabled: d.offset === 0, onclick: () => { sessionState.offset = Math.max(0, d.offset - d.limit); navigate(); } }, "◀ previous"), " ",
      `${d.total ? d.offset + 1 : 0}–${d.offset + d.sessions.length} of ${d.total} connected here`, " ",
      h("button", { disabled: d.offset + d.limit >= d.total, onclick: () => { sessionState.offset = d.offset + d.limit; navigate(); } }, "next ▶"));
    render(gen, h("h2", {}, "Sessions connected to this member"),
      h("p", { class: "muted" }, "sessions in the ensemble: " + (d.global_sessions || "?")),
      h("table", { id: "sessions" }, head, rows), pager);
  });
}

// --- Locks ----------------------------------------------------------------

function nodeRow(n, role, token) {
  const tags = [h("span", { class: "tag" + (role === "holder" ? " holder" : "") }, role)];
  if (n.tombstone) tags.push(h("span", { class: "tag tomb" }, "tombstone: lock delay " + ago(n.delay_left_ms) + " left"));
  return h("tr", { class: role, "data-session": n.session, "data-name": n.name },
    h("td", {}, tags), h("td", { class: "mono session" }, n.session), h("td", { class: "mono" }, n.client),
    h("td", {}, (role === "holder" ? "held " : "waiting ") + ago(n.age_ms)),
    h("td", { class: "mono" }, n.czxid.toString(16).replace(/^/, "0x")), h("td", { class: "mono muted" }, n.name),
    h("td", { class: "mono token", title: token || "" }, token ? token.slice(0, 16) + "…" : ""));
}

async function locksPage(gen) {
  every(1000, async () => {
    let d;
    try { d = await api("locks"); } catch (err) { return render(gen, banner("bad", err.message)); }
    const out = [h("h2", {}, "Locks (" + d.total + ")")];
    if (!d.locks.length) out.push(h("p", { class: "muted", id: "no-locks" }, "No lock is held or awaited."));
    for (const l of d.locks) {
      out.push(h("div", { class: "lock", "data-path": l.path },
        h("div", {}, h("span", { class: "path mono" }, l.path), h("span", { class: "tag" }, l.kind),
          h("span", { class: "muted" }, " · " + l.holders.length + " holding, " + l.waiters.length + " waiting")),
        h("table", {}, h("tr", {}, ["", "session", "client", "for", "czxid (fencing)", "node", "token"].map(t => h("th", {}, t))),
          l.holders.map(n => nodeRow(n, "holder", (d.tokens || {})[l.path.replace(/\/$/, "") + "/" + n.name])),
          l.waiters.map(n => nodeRow(n, "waiter")))));
    }
    if (d.total > d.locks.length) out.push(h("p", { class: "muted" }, "first " + d.locks.length + " of " + d.total + " lock paths"));
    out.push(h("p", { class: "muted" }, "The holder's signed fencing token (base64; hover for all of it) is at /zookeeper/fencing<lock node>, " +
      "shown only to the console's identity; its order is the czxid."));
    render(gen, ...out);
  });
}

// --- Tree -----------------------------------------------------------------

function hexdump(bytes) {
  const lines = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const row = bytes.slice(i, i + 16);
    const hex = Array.from(row, b => b.toString(16).padStart(2, "0")).join(" ");
    const asc = Array.from(row, b => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
    lines.push(i.toString(16).padStart(8, "0") + "  " + hex.padEnd(48) + "  " + asc);
  }
  return lines.join("\n");
}

function showData(b64, format) {
  const bin = atob(b64);
  const bytes = Uint8Array.from(bin, c => c.charCodeAt(0));
  if (format === "hex") return hexdump(bytes);
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  if (format === "json") {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return "(not JSON: " + e.message + ")"; }
  }
  return text;
}

function treeLink(path, label) {
  return h("a", { href: "#/tree?path=" + encodeURIComponent(path) }, label);
}

function join(dir, name) { return dir === "/" ? "/" + name : dir + "/" + name; }

async function treePage(gen, params) {
  const path = params.get("path") || "/";
  const prefix = params.get("prefix") || "";
  const after = params.get("after") || "";
  const format = params.get("format") || "text";
  let n;
  try { n = await api("tree", { path, prefix, after, limit: 100 }); } catch (err) {
    return render(gen, h("h2", {}, path), banner("bad", err.message), treeLink("/", "back to /"));
  }
  const parts = path.split("/").filter(Boolean);
  const crumbs = h("div", { class: "crumbs mono", id: "crumbs" }, treeLink("/", "/"),
    parts.map((p, i) => [i ? " / " : "", treeLink("/" + parts.slice(0, i + 1).join("/"), p)]));
  const go = extra => { location.hash = "#/tree?" + new URLSearchParams(Object.assign({ path }, extra)).toString(); };
  const pathBox = h("input", { type: "text", id: "path-input", value: path, size: 40 });
  const prefixBox = h("input", { type: "text", id: "prefix-input", value: prefix, size: 16, placeholder: "name prefix" });
  const form = h("form", { onsubmit: ev => { ev.preventDefault(); location.hash = "#/tree?" + new URLSearchParams({ path: pathBox.value.trim() || "/", prefix: prefixBox.value }).toString(); } },
    "path ", pathBox, " children starting with ", prefixBox, " ", h("button", { type: "submit" }, "go"));
  const kids = h("ul", { class: "children", id: "children" }, n.children.map(c => h("li", { "data-name": c.name },
    treeLink(join(path, c.name), c.name), h("span", { class: "muted" }, (c.num_children ? " · " + c.num_children + " children" : "") +
      (c.ephemeral ? " · ephemeral" : "") + " · " + c.data_length + " B"))));
  const pager = h("p", {}, `${n.children.length} shown of ${n.matched} ${prefix ? "matching" : "children"} `,
    after ? h("button", { onclick: () => go({ prefix }) }, "first page") : null, " ",
    n.more ? h("button", { id: "next-page", onclick: () => go({ prefix, after: n.next_after }) }, "next page ▶") : null);
  const st = n.stat;
  const stat = kv([["czxid", st.czxid], ["mzxid", st.mzxid], ["pzxid", st.pzxid], ["ctime", new Date(st.ctime).toISOString()],
    ["mtime", new Date(st.mtime).toISOString()], ["version", st.version], ["cversion", st.cversion], ["aversion", st.aversion],
    ["ephemeralOwner", st.ephemeral_owner], ["dataLength", st.data_length], ["numChildren", st.num_children]]);
  let data;
  if (n.data !== undefined) {
    const sel = h("select", { id: "format", onchange: ev => go({ prefix, after, format: ev.target.value }) },
      ["text", "json", "hex"].map(f => h("option", { value: f, selected: f === format }, f)));
    data = [h("h2", {}, "Data ", sel), h("pre", { class: "data", id: "data" }, n.data === "" ? "(empty)" : showData(n.data, format)),
      n.data_truncated ? h("p", { class: "muted" }, "first 64 KiB of " + st.data_length + " bytes") : null];
  } else {
    data = [h("h2", {}, "Data"), banner("info", n.data_hidden)];
  }
  const acl = n.acl ? h("table", { id: "acl" }, h("tr", {}, h("th", {}, "scheme"), h("th", {}, "id"), h("th", {}, "perms")),
    n.acl.map(a => h("tr", {}, h("td", {}, a.scheme), h("td", { class: "mono" }, a.id), h("td", {}, a.perms.join(", ")))))
    : banner("info", n.acl_hidden);
  render(gen, h("h2", {}, "Tree"), form, crumbs,
    h("div", { class: "cols" }, h("div", {}, h("h2", {}, "Children"), kids, pager),
      h("div", {}, h("h2", {}, "Stat"), stat), h("div", {}, data, h("h2", {}, "ACL"), acl)));
}

// --- Metrics --------------------------------------------------------------

const NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

function fmt(v) {
  if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (v >= 1e4) return (v / 1e3).toFixed(1) + "k";
  if (Number.isInteger(v) || v >= 100) return String(Math.round(v));
  return v.toFixed(2);
}

// plot draws one series as a polyline over the window, with its max and
// the latest value, so a spike shows as a spike.
function plot(title, unit, points, t0, t1) {
  const W = 400, H = 120, L = 40, B = 16;
  const el = svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img", "aria-label": title });
  const maxV = Math.max(1e-9, ...points.map(p => p[1]));
  const x = t => L + (W - L - 4) * (t - t0) / Math.max(1, t1 - t0);
  const y = v => 4 + (H - B - 8) * (1 - v / maxV);
  for (const f of [0, 0.5, 1]) {
    el.append(svg("line", { class: "grid", x1: L, x2: W - 4, y1: y(maxV * f), y2: y(maxV * f) }));
    const lab = svg("text", { x: 2, y: y(maxV * f) + (f === 1 ? 9 : 3) });
    lab.textContent = fmt(maxV * f);
    el.append(lab);
  }
  const span = (t1 - t0) / 1000;
  const ends = [[t0, "−" + (span < 120 ? Math.round(span) + " s" : Math.round(span / 60) + " min")], [t1, "now"]];
  for (const [t, s] of ends) {
    const lab = svg("text", { x: t === t0 ? L : W - 24, y: H - 2 });
    lab.textContent = s;
    el.append(lab);
  }
  el.append(svg("polyline", { points: points.map(p => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" ") }));
  const last = points.length ? points[points.length - 1][1] : 0;
  return h("div", { class: "plot", "data-series": title }, h("span", { class: "title" }, title),
    h("span", { class: "muted" }, " now " + fmt(last) + (unit ? " " + unit : "") + " · max " + fmt(maxV === 1e-9 ? 0 : maxV)), el);
}

async function metricsPage(gen) {
  every(5000, async () => {
    let d;
    try { d = await api("metrics"); } catch (err) { return render(gen, banner("bad", err.message)); }
    // The x axis spans the window, or the history there is when it is
    // shorter (a member that just started), so the points are never
    // squeezed into a corner.
    const t1 = Date.now();
    const first = d.samples.length ? d.samples[0].t : t1;
    const t0 = Math.max(t1 - d.window_ms, Math.min(first, t1 - 10 * d.interval_ms));
    const plots = d.series.map((s, i) => plot(s.Title, s.Unit, d.samples.filter(p => p.t >= t0).map(p => [p.t, p.v[i]]), t0, t1));
    render(gen, h("h2", {}, "Up to the last " + Math.round(d.window_ms / 60000) + " minutes, a point every " + d.interval_ms / 1000 + " s"),
      h("div", { class: "plots", id: "plots" }, plots));
  });
}

// --- routing --------------------------------------------------------------

const pages = { ensemble: ensemblePage, tree: treePage, sessions: sessionsPage, locks: locksPage, metrics: metricsPage };

function navigate() {
  clearInterval(timer);
  generation++;
  const [route, query] = (location.hash.replace(/^#\/?/, "") || "ensemble").split("?");
  const name = pages[route] ? route : "ensemble";
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === name);
  document.body.dataset.page = name;
  pages[name](generation, new URLSearchParams(query || ""));
}

async function whoami() {
  const el = document.getElementById("whoami");
  try {
    const w = await api("whoami");
    el.textContent = w.identity ? "reading as " + w.identity.scheme + ":" + w.identity.user : "no identity: structure only, no data";
  } catch (err) { el.textContent = err.message; }
}

window.addEventListener("hashchange", navigate);
whoami();
navigate();
