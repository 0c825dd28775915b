// Memora's memory inspector: plain JavaScript, no external assets.
// Every value from the server is put on the page as text (never as HTML).
"use strict";

const TOKEN_KEY = "memora.inspector.token";
// Without authentication a server trusts the user a client names, as its graph runs do.
const USER_KEY = "memora.inspector.user";
const $ = (id) => document.getElementById(id);
const state = { user: null, auth: false, current: null, shown: [] };

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

async function api(path, options = {}) {
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
  if (sessionStorage.getItem(USER_KEY)) headers["X-Memora-User"] = sessionStorage.getItem(USER_KEY);
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch("/ui/api" + path, {
      method: options.method || "GET", headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
  } catch (error) {
    throw new ApiError(0, "the server cannot be reached; check that it is running");
  }
  let data = null;
  try { data = await response.json(); } catch (error) { data = null; }
  if (!response.ok) {
    const detail = (data && data.detail) || `the server answered ${response.status}`;
    throw new ApiError(response.status, String(detail).split("\n")[0]);
  }
  return data;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return isNaN(date) ? String(iso) : date.toLocaleString();
}

function showError(error) {
  const box = $("error");
  box.textContent = error ? (error.message || String(error)) : "";
  box.hidden = !error;
  if (error && error.status === 401) signOut(error.message);
}

function notify(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

function empty(list, text) {
  list.replaceChildren(el("li", { class: "empty" }, text));
}

// -- sign-in -----------------------------------------------------------------------

async function start() {
  try {
    const me = await api("/me");
    state.user = me.user_id;
    state.auth = me.auth;
    $("sign-in").hidden = true;
    $("tabs").hidden = false;
    $("who").hidden = false;
    $("user-id").textContent = "Signed in as " + me.user_id + (me.auth ? "" : " (local)");
    $("sign-out").hidden = !me.auth;
    $("switch-user").hidden = !me.user_header;
    $("as-user").value = me.user_id;
    route();
    refreshPendingCount();
  } catch (error) {
    if (error.status === 401) signOut(token() ? error.message : "");
    else showError(error);
  }
}

function signOut(reason) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.user = null;
  document.querySelectorAll(".tab").forEach((section) => { section.hidden = true; });
  // Nothing of the last user stays on the page, shown or hidden.
  for (const id of ["memory-list", "approval-list", "detail-memory", "detail-chain", "detail-audit",
    "forget-list", "memory-summary", "pending-count", "user-id"]) {
    $(id).replaceChildren();
  }
  $("profile-table").tBodies[0].replaceChildren();
  const link = $("export-link");
  if (link.href) URL.revokeObjectURL(link.href);
  link.removeAttribute("href");
  link.hidden = true;
  notify("");
  $("tabs").hidden = true;
  $("who").hidden = true;
  $("sign-in").hidden = false;
  $("error").textContent = reason || "";
  $("error").hidden = !reason;
}

$("sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("token").value.trim();
  if (!value) return;
  sessionStorage.setItem(TOKEN_KEY, value);
  $("token").value = "";
  showError(null);
  start();
});
$("sign-out").addEventListener("click", () => signOut(""));
$("switch-user").addEventListener("submit", (event) => {
  event.preventDefault();
  const user = $("as-user").value.trim();
  if (user) sessionStorage.setItem(USER_KEY, user); else sessionStorage.removeItem(USER_KEY);
  showError(null);
  start();
});

// -- navigation ----------------------------------------------------------------------

const TABS = { memories: () => loadMemories(), approvals: loadApprovals, profile: loadProfile, data: async () => {} };

function show(name) {
  document.querySelectorAll(".tab").forEach((section) => { section.hidden = section.id !== name; });
  document.querySelectorAll("nav a").forEach((link) => {
    link.classList.toggle("active", link.dataset.tab === name);
  });
}

function route() {
  if (!state.user) return;
  const name = location.hash.slice(1) in TABS ? location.hash.slice(1) : "memories";
  show(name);
  notify("");
  showError(null);
  TABS[name]().catch(showError);
}

window.addEventListener("hashchange", route);
// A tab whose address is already current (back from a memory's history) still reloads it.
document.querySelectorAll("nav a").forEach((link) => {
  link.addEventListener("click", (event) => {
    if (location.hash === link.getAttribute("href")) { event.preventDefault(); route(); }
  });
});
document.querySelectorAll(".back").forEach((button) => {
  button.addEventListener("click", () => { show("memories"); });
});

// -- memories --------------------------------------------------------------------------

function badges(memory) {
  const meta = el("div", { class: "meta" },
    el("span", { class: "badge " + memory.status }, memory.status),
    el("span", { class: "badge" }, memory.memory_type === "episodic" ? "event" : "fact"),
    el("span", { title: "importance 1–5" }, "importance " + memory.importance + "/5"),
    el("span", {}, "written " + when(memory.created_at)));
  if (memory.updated_at !== memory.created_at) meta.append(el("span", {}, "updated " + when(memory.updated_at)));
  if (memory.needs_review) meta.append(el("span", { class: "badge review" }, "needs review"));
  if (memory.expires_at) meta.append(el("span", {}, "expires " + when(memory.expires_at)));
  if (memory.score !== undefined) meta.append(el("span", {}, "match " + memory.score));
  return meta;
}

function memoryCard(memory) {
  return el("li", { class: "memory", "data-id": memory.id },
    el("p", { class: "text" }, memory.content),
    badges(memory),
    el("div", { class: "actions" },
      el("button", { type: "button", class: "secondary", onclick: () => openDetail(memory.id) }, "History"),
      el("button", { type: "button", class: "danger", onclick: () => openForget(memory.id) }, "Forget")));
}

async function loadMemories(more = false) {
  const list = $("memory-list");
  const params = new URLSearchParams();
  if (more) params.set("offset", String(list.querySelectorAll("li.memory").length));
  const query = $("query").value.trim();
  if (query) params.set("q", query);
  if ($("status").value) params.set("status", $("status").value);
  if ($("type").value) params.set("type", $("type").value);
  const data = await api("/memories?" + params);
  if (more) list.append(...data.memories.map(memoryCard));
  else list.replaceChildren(...data.memories.map(memoryCard));
  const shown = list.querySelectorAll("li.memory").length;
  $("more").hidden = data.search || shown >= data.total;
  $("memory-summary").textContent = data.search
    ? `${shown} ${shown === 1 ? "memory matches" : "memories match"} “${query}”.`
    : `${data.total} ${data.total === 1 ? "memory" : "memories"}` + (shown < data.total ? `, newest ${shown} shown.` : ".");
  if (!shown) {
    empty(list, data.search || params.has("status") || params.has("type")
      ? "No memory matches."
      : "No memories yet. Memora remembers what you tell it in a conversation.");
  }
}

$("more").addEventListener("click", () => { loadMemories(true).catch(showError); });

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  showError(null);
  loadMemories().catch(showError);
});

function auditLine(entry) {
  const parts = [when(entry.at) + " — " + entry.event + " " + entry.decision];
  if (entry.event === "read") parts.push("a search for “" + (entry.query || "") + "” used it");
  if (entry.action) parts.push("action " + entry.action);
  if (entry.reason) parts.push("reason " + entry.reason);
  if (entry.source) parts.push("by " + entry.source);
  if (entry.thread_id) parts.push("in conversation " + entry.thread_id);
  if (entry.scores && entry.scores.length) parts.push("score " + entry.scores.join(", "));
  return el("li", { class: "audit-" + entry.event }, parts.join(" · "));
}

function versionCard(memory) {
  const source = memory.source || {};
  const origin = source.thread_id
    ? `from conversation ${source.thread_id}` + (source.turn !== null && source.turn !== undefined ? `, turn ${source.turn}` : "")
    : `added by ${source.actor || "user"}`;
  return el("li", {}, el("p", { class: "text" }, memory.content), badges(memory),
    el("div", { class: "meta" }, el("span", {}, origin)));
}

async function openDetail(memoryId) {
  showError(null);
  try {
    const data = await api("/memories/" + encodeURIComponent(memoryId));
    $("detail-memory").replaceChildren(el("h2", {}, data.memory.content), badges(data.memory));
    $("detail-chain").replaceChildren(...data.chain.map(versionCard));
    if (data.audit.length) $("detail-audit").replaceChildren(...data.audit.map(auditLine));
    else empty($("detail-audit"), "Nothing recorded about this memory yet.");
    show("detail");
  } catch (error) { showError(error); }
}

async function openForget(memoryId) {
  showError(null);
  try {
    const data = await api("/memories/" + encodeURIComponent(memoryId) + "/forget");
    $("forget-list").replaceChildren(...data.deletes.map((memory) =>
      el("li", {}, el("p", { class: "text" }, memory.content), badges(memory))));
    const count = data.deletes.length;
    $("forget-confirm").textContent = count === 1 ? "Delete 1 memory" : `Delete ${count} memories`;
    state.current = memoryId;
    state.shown = data.deletes.map((memory) => memory.id);  // the most the button deletes
    show("forget");
  } catch (error) { showError(error); }
}

$("forget-confirm").addEventListener("click", async () => {
  try {
    const versions = encodeURIComponent(state.shown.join(","));
    const data = await api("/memories/" + encodeURIComponent(state.current) + "?versions=" + versions,
      { method: "DELETE" });
    show("memories");
    await loadMemories();
    notify(`Deleted ${data.deleted.length} ${data.deleted.length === 1 ? "memory" : "memories"}.`);
  } catch (error) { showError(error); }
});

// -- approvals --------------------------------------------------------------------------

async function refreshPendingCount() {
  try {
    const data = await api("/approvals");
    $("pending-count").textContent = data.pending.length ? String(data.pending.length) : "";
    return data;
  } catch (error) { showError(error); return null; }
}

function approvalCard(item) {
  const buttons = el("div", { class: "actions" });
  // A paused conversation is resumed; a request made through the store or MCP is answered.
  const where = item.request_id ? "requested through " + item.source : "conversation " + item.thread_id;
  const card = el("li", { class: "approval", "data-memory": item.memory_id, "data-thread": item.thread_id || "" },
    el("p", { class: "text" }, item.preview),
    ...(item.also_deletes || []).map((text) =>
      el("p", { class: "text older" }, "Also deletes this older version: " + text)),
    el("div", { class: "meta" }, el("span", {}, "Reason: " + (item.reason || "—"))),
    el("div", { class: "meta" },
      el("span", {}, where), el("span", {}, "asked " + when(item.updated))),
    buttons);
  const decide = (decision) => async () => {
    buttons.querySelectorAll("button").forEach((button) => { button.disabled = true; });
    try {
      const result = item.request_id
        ? await api("/requests/" + encodeURIComponent(item.request_id), { method: "POST", body: { decision } })
        : await api("/approvals/" + encodeURIComponent(item.thread_id), {
          method: "POST", body: { decision, memory_id: item.memory_id },
        });
      result.deleted = Array.isArray(result.deleted) ? result.deleted.length > 0 : result.deleted;
      await loadApprovals();
      notify(result.deleted ? "Deleted: " + item.preview : "Kept: " + item.preview);
    } catch (error) {
      showError(error);
      buttons.querySelectorAll("button").forEach((button) => { button.disabled = false; });
    }
  };
  if (item.allowed_decisions.includes("approve")) {
    buttons.append(el("button", { type: "button", class: "danger", onclick: decide("approve") }, "Approve"));
  }
  if (item.allowed_decisions.includes("reject")) {
    buttons.append(el("button", { type: "button", class: "secondary", onclick: decide("reject") }, "Reject"));
  }
  return card;
}

async function loadApprovals() {
  const data = await refreshPendingCount();
  if (!data) return;
  const list = $("approval-list");
  if (!data.pending.length) empty(list, "No deletion awaits your approval.");
  else list.replaceChildren(...data.pending.map(approvalCard));
}

// -- profile ----------------------------------------------------------------------------

function renderProfile(profile) {
  const body = $("profile-table").tBodies[0];
  const keys = Object.keys(profile);
  if (!keys.length) {
    body.replaceChildren(el("tr", {}, el("td", { class: "empty", colspan: "3" }, "Your profile is empty.")));
    return;
  }
  body.replaceChildren(...keys.map((key) => el("tr", {},
    el("td", {}, key), el("td", {}, profile[key]),
    el("td", {},
      el("button", { type: "button", class: "link", onclick: () => {
        $("profile-key").value = key; $("profile-value").value = profile[key]; $("profile-value").focus();
      } }, "Edit"), " ",
      el("button", { type: "button", class: "link", onclick: async () => {
        try {
          renderProfile((await api("/profile/" + encodeURIComponent(key), { method: "DELETE" })).profile);
          notify("Removed " + key + ".");
        } catch (error) { showError(error); }
      } }, "Remove")))));
}

async function loadProfile() {
  renderProfile((await api("/profile")).profile);
}

$("profile-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  showError(null);
  const key = $("profile-key").value.trim();
  try {
    const data = await api("/profile", { method: "PUT", body: { key, value: $("profile-value").value } });
    renderProfile(data.profile);
    $("profile-key").value = ""; $("profile-value").value = "";
    notify("Saved " + key + ".");
  } catch (error) { showError(error); }
});

// -- your data --------------------------------------------------------------------------

$("export").addEventListener("click", async () => {
  showError(null);
  try {
    const data = await api("/export");
    const blob = new Blob([JSON.stringify(data, null, 2) + "\n"], { type: "application/json" });
    const link = $("export-link");
    if (link.href) URL.revokeObjectURL(link.href);
    link.href = URL.createObjectURL(blob);
    link.download = `memora-export-${state.user}.json`;
    link.textContent = `Download memora-export-${state.user}.json`;
    link.hidden = false;
    link.click();
    notify(`Exported ${data.memories.length} memories, ${Object.keys(data.profile).length} profile fields, ` +
      `${data.audit.length} audit entries and ${data.threads.length} conversations.`);
  } catch (error) { showError(error); }
});

$("erase-confirm").addEventListener("input", () => {
  $("erase").disabled = $("erase-confirm").value !== state.user;
});

$("erase-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  showError(null);
  try {
    const data = await api("/erase", { method: "POST", body: { confirm: $("erase-confirm").value } });
    const e = data.erased;
    $("erase-confirm").value = "";
    $("erase").disabled = true;
    notify(`Erased ${e.memories} memories, ${e.profile_fields} profile fields, ` +
      `${e.audit_entries} audit entries and ${e.threads} conversations.`);
    refreshPendingCount();
  } catch (error) { showError(error); }
});

start();
