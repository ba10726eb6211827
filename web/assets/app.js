// gpuwatch's page: the GPUs now, alerts and silences, history, the digest.
// It reads and acts through gpuwatch's JSON API; it builds every element
// with the DOM (no HTML from data), so nothing a process or a user named
// can run as script.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const views = ['now', 'alerts', 'history', 'digest'];
  const state = { session: null, status: null, silences: [], view: 'now', params: new URLSearchParams(), charts: [], timer: 0, silenceTimer: 0 };

  // h makes an element: h('p', {class: 'x', 'aria-label': 'y'}, 'text', child…).
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  // api sends a request as the page: the CSRF token with every change, and
  // a 401 (a login session that ended) sends the browser to the login form.
  async function api(path, opts) {
    opts = opts || {};
    const headers = Object.assign({ 'X-GPUWatch-Page': '1' }, opts.headers || {});
    if (opts.method && opts.method !== 'GET' && state.session && state.session.csrf_token) {
      headers['X-CSRF-Token'] = state.session.csrf_token;
    }
    const resp = await fetch(path, Object.assign({}, opts, { headers, credentials: 'same-origin' }));
    if (resp.status === 401) {
      location.assign('/login' + location.hash); // the view asked for, again after the login
      throw new Error('the login session has ended');
    }
    return resp;
  }

  async function failure(resp) {
    const text = await resp.text();
    try { return new Error(JSON.parse(text).error || text); } catch (e) { return new Error(text.trim() || 'HTTP ' + resp.status); }
  }

  async function getJSON(path) {
    const resp = await api(path);
    if (!resp.ok) throw await failure(resp);
    return resp.json();
  }

  // Formats, shared by every view.
  const GiB = 1024 * 1024 * 1024;
  const fmtGiB = (b) => (b / GiB).toFixed(1) + ' GiB';
  // who names whom a process's use is for: "job 4242 (alice)" for a
  // Slurm job's process, else its user.
  const who = (p) => {
    const job = (p.job || '').startsWith('slurm:') ? p.job.slice(6) : '';
    if (job) return 'job ' + job + (p.user ? ' (' + p.user + ')' : '');
    return p.user || 'unknown user';
  };
  const fmtPct = (v) => (v === null || v === undefined ? '–' : Math.round(v) + '%');
  const fmtTemp = (v) => (v === null || v === undefined ? '–' : Math.round(v) + ' °C');
  const fmtPower = (v, limit) => (v === null || v === undefined ? '–' : Math.round(v) + (limit ? ' / ' + Math.round(limit) : '') + ' W');
  // fmtSince is how long ago t was at the latest sample's time (the
  // server's clock, not the browser's).
  function fmtSince(t) {
    if (!t) return '';
    const now = state.status && state.status.time ? new Date(state.status.time).getTime() : Date.now();
    let s = Math.max(0, Math.round((now - new Date(t).getTime()) / 1000));
    const d = Math.floor(s / 86400); s -= d * 86400;
    const hh = Math.floor(s / 3600); s -= hh * 3600;
    const m = Math.floor(s / 60);
    if (d > 0) return d + 'd ' + hh + 'h';
    if (hh > 0) return hh + 'h ' + m + 'm';
    if (m > 0) return m + 'm';
    return 'under a minute';
  }
  const fmtTime = (t) => new Date(t).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  const useLabel = { free: 'free', 'idle-held': 'idle but held', busy: 'busy', mig: 'MIG' };
  // A GPU's key: its host and UUID (a MIG instance's own), or its index
  // when the source gives no UUID.
  const gpuKey = (host, g) => host + '/' + (g.uuid || g.index);
  // labelOf names a GPU as gpuwatch does: "GPU 0", "GPU 0 · MIG 3 (1g.10gb)".
  const labelOf = (g) => g.label || 'GPU ' + (g.index !== undefined ? g.index : g.gpu);
  // instanceName is a MIG instance's label under its GPU: "MIG 3 (1g.10gb)".
  const instanceName = (g) => labelOf(g).replace(/^GPU \d+ · /, '');

  function problem(text) {
    const p = $('problem');
    p.textContent = text || '';
    p.hidden = !text;
  }

  // ---- routing: #now, #alerts, #history?host=a&gpu=0, #digest
  function route(focus) {
    const [name, query] = location.hash.replace(/^#/, '').split('?');
    state.view = views.includes(name) ? name : 'now';
    state.params = new URLSearchParams(query || '');
    for (const v of views) {
      $('view-' + v).hidden = v !== state.view;
      const tab = $('tab-' + v);
      if (v === state.view) tab.setAttribute('aria-current', 'page'); else tab.removeAttribute('aria-current');
    }
    document.title = 'gpuwatch · ' + $('h-' + state.view).textContent + (state.session ? ' · ' + state.session.host : '');
    if (state.view === 'alerts') refreshSilences();
    if (state.view === 'history') showHistory();
    if (state.view === 'digest' && !$('digest').textContent) showDigest();
    if (focus) $('h-' + state.view).focus();
  }

  // ---- the GPUs now
  function hostsOf(st) {
    if (st.hosts && st.hosts.length) return st.hosts;
    return st.gpus && st.gpus.length ? [{ host: st.host, time: st.time, gpus: st.gpus }] : [];
  }

  function alertsByGPU(st) {
    const out = new Map();
    for (const a of st.alerts || []) {
      const k = gpuKey(a.host, a);
      if (!out.has(k)) out.set(k, []);
      out.get(k).push(a);
    }
    return out;
  }

  // byFreeFirst orders a host's GPUs as /gpu free lists them: the free ones
  // first, the largest first, then the others by index.
  function byFreeFirst(a, b) {
    const fa = a.use === 'free' && !a.mig, fb = b.use === 'free' && !b.mig;
    if (fa !== fb) return fa ? -1 : 1;
    if (fa) return (b.memory_total_bytes || 0) - (a.memory_total_bytes || 0) || a.index - b.index;
    return a.index - b.index;
  }

  function matchesFilter(host, g, text) {
    if (!text) return true;
    const hay = [host, 'gpu' + g.index, labelOf(g), g.name, g.uuid, g.use, healthOf(g).condition].concat((g.processes || []).flatMap((p) => [p.user, p.command, String(p.pid), p.container, p.job]));
    return hay.some((s) => s && String(s).toLowerCase().includes(text));
  }

  // isSilenced: the API names the silence that mutes an alert in its
  // "silenced" object (id, ends_at, created_by, comment).
  function isSilenced(a) {
    return !!a.silenced;
  }

  function silencedText(s) {
    return 'silenced' + (s.created_by ? ' by ' + s.created_by : '') + (s.ends_at ? ' until ' + fmtTime(s.ends_at) : '') +
      (s.comment ? ' (' + s.comment + ')' : '');
  }

  // healthOf is the GPU's health as the API says it: its condition (ok,
  // degraded, needs reset, needs service) and the reasons.
  function healthOf(g) {
    const hl = g.health || {};
    return { condition: hl.condition || 'ok', reasons: hl.reasons || [], known: !!hl.known };
  }

  // healthOf's word as a reading of the card, and its reasons (null when
  // it is ok): a whole GPU's or a MIG parent's, whose instances share it.
  function healthShown(g) {
    const health = healthOf(g);
    const word = health.known || health.condition !== 'ok' ? health.condition : 'ok (no readings)';
    return {
      item: h('div', null, h('dt', null, 'Health'), h('dd', { 'data-field': 'health', class: 'health ' + health.condition.replace(' ', '-'),
        title: health.known ? '' : 'no health readings: nothing known is wrong' }, word)),
      reasons: health.reasons.length ? h('p', { class: 'health-reason', 'data-field': 'health-reason' }, health.reasons.join('; ')) : null,
    };
  }

  // cardID is the id of a GPU's card: host and index, and a MIG instance's
  // GPU and compute instance.
  const cardID = (host, g) => 'gpu-' + host + '-' + g.index + (g.mig ? '-mig-' + g.mig.gpu_instance + '-' + g.mig.compute_instance : '');

  // card shows a GPU; a GPU split into MIG instances shows the card's
  // readings, and its instances (byGPU: the alerts by GPU key) inside it.
  function card(host, g, alerts, several, instances, byGPU) {
    const title = (several ? host + ' · ' : '') + (g.mig ? instanceName(g) : labelOf(g));
    const id = cardID(host, g);
    const firing = alerts.filter((a) => a.state === 'firing' && !isSilenced(a));
    const el = h(g.mig ? 'section' : 'article', { class: (g.mig ? 'instance ' : 'card ') + g.use + (firing.length ? ' alerting' : ''), id, 'aria-labelledby': id + '-t', 'data-host': host, 'data-index': g.index, 'data-uuid': g.uuid, 'data-use': g.use });
    el.append(h('header', null, h(g.mig ? 'h4' : 'h3', { id: id + '-t' }, title), h('span', { class: 'badge ' + g.use, 'data-field': 'use' }, useLabel[g.use] || g.use)));
    if (!g.mig) el.append(h('p', { class: 'model', 'data-field': 'model' }, (g.name || 'unknown model') + (g.mig_enabled ? ' · ' + instances.length + ' MIG instance' + (instances.length === 1 ? '' : 's') : '')));
    if (g.mig_enabled) {
      // The card's readings; memory, utilization and processes are the
      // instances'.
      const health = healthShown(g);
      el.append(h('dl', { class: 'readings' },
        h('div', null, h('dt', null, 'Temperature'), h('dd', { 'data-field': 'temperature' }, fmtTemp(g.temperature_c))),
        h('div', null, h('dt', null, 'Power'), h('dd', { 'data-field': 'power' }, fmtPower(g.power_w, g.power_limit_w))),
        health.item));
      if (health.reasons) el.append(health.reasons);
      if (alerts.length) el.append(alertBadges(alerts));
      el.append(h('div', { class: 'instances', 'aria-label': 'MIG instances of ' + title }, instances.map((ig) =>
        card(host, ig, byGPU.get(gpuKey(host, ig)) || [], false, [], byGPU))));
      el.append(historyLink(host, g, id, title));
      return el;
    }
    if (g.memory_total_bytes) {
      const pct = (100 * g.memory_used_bytes) / g.memory_total_bytes;
      const text = fmtGiB(g.memory_used_bytes) + ' of ' + fmtGiB(g.memory_total_bytes);
      const fill = h('span');
      fill.style.width = Math.min(100, pct).toFixed(1) + '%';
      el.append(h('div', { class: 'bar' + (pct >= 95 ? ' high' : ''), role: 'meter', 'aria-label': 'Memory used', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct.toFixed(0), 'aria-valuetext': text }, fill));
      el.append(h('p', { class: 'mem', 'data-field': 'memory' }, text + ' used (' + fmtPct(pct) + ')'));
    } else {
      el.append(h('p', { class: 'mem', 'data-field': 'memory' }, 'memory unknown'));
    }
    if (g.mig) {
      // An instance's temperature and power are its GPU's.
      el.append(h('dl', { class: 'readings' },
        h('div', null, h('dt', null, 'Utilization'), h('dd', { 'data-field': 'utilization' }, g.utilization_gpu === null || g.utilization_gpu === undefined ? 'not measured' : fmtPct(g.utilization_gpu)))));
    } else {
      const health = healthShown(g);
      el.append(h('dl', { class: 'readings' },
        h('div', null, h('dt', null, 'Utilization'), h('dd', { 'data-field': 'utilization' }, fmtPct(g.utilization_gpu))),
        h('div', null, h('dt', null, 'Temperature'), h('dd', { 'data-field': 'temperature' }, fmtTemp(g.temperature_c))),
        h('div', null, h('dt', null, 'Power'), h('dd', { 'data-field': 'power' }, fmtPower(g.power_w, g.power_limit_w))),
        health.item));
      if (health.reasons) el.append(health.reasons);
    }
    if (g.use !== 'free') {
      const held = g.held_since ? (g.use === 'idle-held' ? 'Idle but held for ' : 'Held for ') + fmtSince(g.held_since) : 'Held';
      const procs = g.processes || [];
      el.append(h('p', { class: 'mem', 'data-field': 'held' }, held + (procs.length ? ' by' : ' (no process listed)')));
      if (procs.length) {
        // A hub knows what the agents export: the user and the memory,
        // not always the pid and command.
        el.append(h('ul', { class: 'holders', 'aria-label': 'Processes' }, procs.map((p) =>
          h('li', { 'data-pid': p.pid }, h('strong', null, who(p)), p.pid > 0 ? ' · pid ' + p.pid : '',
            p.command ? [' · ', h('span', { class: 'cmd' }, p.command)] : '', p.container ? ' · ' + p.container : '', ' · ' + fmtGiB(p.memory_bytes)))));
      }
    }
    if (alerts.length) el.append(alertBadges(alerts));
    el.append(historyLink(host, g, id, title));
    return el;
  }

  // alertBadges are a GPU's alerts, each naming the process of a rule
  // that runs per process.
  function alertBadges(alerts) {
    return h('div', { class: 'card-alerts', 'aria-label': 'Alerts' }, alerts.map((a) =>
      h('a', { class: 'badge ' + (isSilenced(a) ? 'silenced' : a.state), href: '#alerts' },
        a.alert + (a.process ? ' (pid ' + a.process.pid + ')' : '') + (isSilenced(a) ? ' (silenced)' : ' ' + a.state))));
  }

  function historyLink(host, g, id, title) {
    const q = '#history?host=' + encodeURIComponent(host) + '&gpu=' + g.index + (g.mig ? '&uuid=' + encodeURIComponent(g.uuid) : '');
    return h('div', { class: 'card-actions' }, h('a', { id: id + '-history', href: q, 'aria-label': 'History of ' + title }, 'History'));
  }

  function renderNow() {
    const st = state.status;
    if (!st) return;
    const hosts = hostsOf(st);
    const several = state.session.hub || hosts.length > 1;
    $('filter-form').hidden = !several;
    const text = $('filter').value.trim().toLowerCase();
    const onlyFree = $('only-free').checked;
    const byGPU = alertsByGPU(st);
    const counts = { free: 0, busy: 0, 'idle-held': 0 };
    const conditions = {};
    const free = [];
    let total = 0, gpuCount = 0;
    const groups = [];
    for (const hs of hosts) {
      // A GPU split into MIG instances is one card, its instances in it;
      // the instances count as GPUs, free, busy or idle but held.
      const whole = hs.gpus.filter((g) => !g.mig).sort(byFreeFirst);
      const instancesOf = (g) => hs.gpus.filter((i) => i.mig && (i.mig.parent_uuid ? i.mig.parent_uuid === g.uuid : i.index === g.index));
      gpuCount += whole.length;
      for (const g of whole) {
        const c = healthOf(g).condition;
        if (c !== 'ok') conditions[c] = (conditions[c] || 0) + 1;
      }
      for (const g of hs.gpus) {
        if (g.mig_enabled) continue;
        total++;
        counts[g.use] = (counts[g.use] || 0) + 1;
        if (g.use === 'free') free.push({ host: hs.host, g });
      }
      const shows = (g) => (!onlyFree || g.use === 'free') && matchesFilter(hs.host, g, text);
      const shown = whole.filter((g) => shows(g) || (g.mig_enabled && instancesOf(g).some(shows)));
      if (!shown.length && (text || onlyFree)) continue;
      const group = h('section', { class: 'host-group', 'aria-label': several ? 'Host ' + hs.host : 'GPUs', 'data-host': hs.host });
      if (several) group.append(h('h3', null, hs.host + ' · ' + whole.length + ' GPU' + (whole.length === 1 ? '' : 's')));
      if (!hs.gpus.length) group.append(h('p', { class: 'empty' }, 'No GPU reports from this host now.'));
      group.append(h('div', { class: 'cards' }, shown.map((g) => card(hs.host, g, byGPU.get(gpuKey(hs.host, g)) || [], several,
        g.mig_enabled ? instancesOf(g).filter((i) => shows(i) || shows(g)) : [], byGPU))));
      groups.push(group);
    }
    free.sort((a, b) => (b.g.memory_total_bytes || 0) - (a.g.memory_total_bytes || 0) || a.host.localeCompare(b.host) || a.g.index - b.g.index);
    const firing = (st.alerts || []).filter((a) => a.state === 'firing' && !isSilenced(a)).length;
    const summary = $('summary');
    const instances = total - hosts.reduce((n, hs) => n + hs.gpus.filter((g) => !g.mig && !g.mig_enabled).length, 0);
    summary.replaceChildren((instances ? gpuCount + ' GPU' + (gpuCount === 1 ? '' : 's') + ' (' + instances + ' MIG instance' + (instances === 1 ? '' : 's') + ')'
      : total + ' GPU' + (total === 1 ? '' : 's')) + (several ? ' on ' + hosts.length + ' hosts' : '') + ': ' +
      counts.free + ' free, ' + counts.busy + ' busy, ' + counts['idle-held'] + ' idle but held' +
      (firing ? ' · ' + firing + ' alert' + (firing === 1 ? '' : 's') + ' firing' : '') +
      (Object.keys(conditions).length ? ' · health: ' + ['needs service', 'needs reset', 'degraded'].filter((c) => conditions[c]).map((c) => conditions[c] + ' ' + c).join(', ') : ''));
    if (several && free.length) {
      summary.append(h('br'), 'Free now: ', free.slice(0, 24).map((f, i) =>
        [i ? ', ' : '', h('a', { href: '#now', 'data-target': cardID(f.host, f.g) }, f.host + ' ' + labelOf(f.g))]));
    }
    // A redraw keeps the keyboard's place: the control that had the focus
    // gets it back in the new cards.
    const focusID = document.activeElement && $('hosts').contains(document.activeElement) ? document.activeElement.id : '';
    if (!hosts.length) groups.push(h('p', { class: 'empty' }, 'No sample yet: gpuwatch has not read its GPUs.'));
    else if (!groups.length) groups.push(h('p', { class: 'empty' }, 'No GPU matches.'));
    $('hosts').replaceChildren(...groups);
    $('hosts').removeAttribute('aria-busy');
    if (focusID && $(focusID)) $(focusID).focus();
    const count = $('alert-count');
    count.textContent = String(firing);
    count.hidden = firing === 0;
    count.setAttribute('aria-label', firing + ' firing');
    fillGPUChoices(hosts);
  }

  // ---- alerts and silences
  function renderAlerts() {
    const st = state.status;
    if (!st) return;
    $('alerts').removeAttribute('aria-busy');
    const list = st.alerts || [];
    if (!list.length) {
      $('alerts').replaceChildren(h('p', { class: 'empty' }, 'No alert is pending or firing.'));
      return;
    }
    $('alerts').replaceChildren(h('div', { class: 'list', role: 'list' }, list.map((a) => {
      const silenced = isSilenced(a);
      const where = a.gpu >= 0 ? a.host + ' · ' + labelOf(a) + (a.process ? ', pid ' + a.process.pid + (a.process.user ? ' (' + a.process.user + ')' : '') : '') : a.host;
      const meta = [a.state + ' since ' + fmtTime(a.since) + ' (' + fmtSince(a.since) + ')'];
      if (a.value_text) meta.push('value ' + a.value_text);
      if (a.answer) meta.push(a.answer);
      if (a.acknowledged_by) meta.push('acknowledged by ' + a.acknowledged_by);
      if (silenced) meta.push(silencedText(a.silenced));
      return h('article', { class: 'item ' + (silenced ? 'silenced' : a.state), role: 'listitem', 'data-alert': a.alert, 'data-key': a.key },
        h('header', null, h('span', { class: 'badge ' + (silenced ? 'silenced' : a.state) }, silenced ? 'silenced' : a.state),
          h('strong', null, a.alert), h('span', null, where), a.severity ? h('span', { class: 'meta' }, a.severity) : null),
        h('p', null, a.summary || ''),
        h('p', { class: 'meta' }, meta.join(' · ')),
        h('div', { class: 'actions' }, h('button', { type: 'button', class: 'quiet small', 'aria-label': 'Silence ' + a.alert + ' on ' + where, onclick: () => prefillSilence(a) }, 'Silence…')));
    })));
  }

  function prefillSilence(a) {
    $('sil-alert').value = a.alert;
    $('sil-host').value = a.host || '';
    $('sil-gpu').value = a.gpu >= 0 ? String(a.gpu) : '';
    $('silence-box').open = true;
    $('sil-comment').focus();
  }

  const quote = (v) => JSON.stringify(v);

  async function addSilence(ev) {
    ev.preventDefault();
    const out = $('silence-result');
    const matchers = [];
    const alert = $('sil-alert').value.trim(), host = $('sil-host').value.trim(), gpu = $('sil-gpu').value.trim();
    if (alert) matchers.push('alert=' + quote(alert));
    if (host) matchers.push('host=' + quote(host));
    if (gpu) matchers.push('gpu=' + quote(gpu));
    if (!matchers.length) matchers.push('alert=~".+"');
    const body = { matchers, duration: $('sil-duration').value, created_by: $('sil-by').value.trim(), comment: $('sil-comment').value.trim() };
    out.textContent = 'Saving…';
    try {
      const resp = await api('/api/v1/silences', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      if (!resp.ok) throw await failure(resp);
      const s = await resp.json();
      out.textContent = 'Silenced until ' + fmtTime(s.ends_at) + ' (' + s.matchers.join(', ') + ').' + (s.warnings && s.warnings.length ? ' Note: ' + s.warnings.join(' ') : '');
      $('sil-comment').value = '';
      refreshSilences();
      refresh();
    } catch (e) {
      out.textContent = 'Not saved: ' + e.message;
    }
  }

  async function expireSilence(s) {
    try {
      const resp = await api('/api/v1/silences/' + encodeURIComponent(s.id), { method: 'DELETE' });
      if (!resp.ok) throw await failure(resp);
      $('silence-result').textContent = 'Expired the silence of ' + s.matchers.join(', ') + '.';
      refreshSilences();
      refresh();
    } catch (e) {
      $('silence-result').textContent = 'Not expired: ' + e.message;
    }
  }

  function silenceItem(s) {
    return h('article', { class: 'item', role: 'listitem', 'data-silence': s.id },
      h('header', null, h('span', { class: 'badge ' + (s.state === 'expired' ? 'silenced' : 'pending') }, s.state), h('strong', null, s.matchers.join(', '))),
      h('p', null, s.comment || ''),
      h('p', { class: 'meta' }, 'by ' + (s.created_by || 'unknown') + ' · ' + fmtTime(s.starts_at) + ' to ' + fmtTime(s.ends_at)),
      s.state === 'expired' ? null : h('div', { class: 'actions' }, h('button', { type: 'button', class: 'quiet small', 'aria-label': 'Expire the silence of ' + s.matchers.join(', '), onclick: () => expireSilence(s) }, 'Expire')));
  }

  async function refreshSilences() {
    clearTimeout(state.silenceTimer);
    try {
      state.silences = await getJSON('/api/v1/silences');
      const live = state.silences.filter((s) => s.state !== 'expired');
      const expired = state.silences.filter((s) => s.state === 'expired');
      const kids = [live.length ? h('div', { class: 'list', role: 'list', 'aria-label': 'Active and pending silences' }, live.map(silenceItem)) : h('p', { class: 'empty' }, 'No silence is active.')];
      if (expired.length) kids.push(h('details', null, h('summary', null, 'Expired (' + expired.length + ')'), h('div', { class: 'list', role: 'list' }, expired.map(silenceItem))));
      $('silences').replaceChildren(...kids);
    } catch (e) {
      $('silences').replaceChildren(h('p', { class: 'error' }, 'Cannot read the silences: ' + e.message));
    }
    if (state.view === 'alerts') state.silenceTimer = setTimeout(refreshSilences, 15000);
  }

  // ---- history
  function fillGPUChoices(hosts) {
    const sel = $('hist-gpu');
    // An option's value is host/index, and /uuid for a MIG instance.
    const value = (host, g) => host + '/' + g.index + (g.mig ? '/' + g.uuid : '');
    const keys = hosts.flatMap((hs) => hs.gpus.map((g) => value(hs.host, g)));
    if (sel.dataset.keys === keys.join(',')) return;
    const current = sel.value;
    sel.replaceChildren(...hosts.flatMap((hs) => hs.gpus.map((g) =>
      h('option', { value: value(hs.host, g) }, (hosts.length > 1 || state.session.hub ? hs.host + ' · ' : '') + labelOf(g) + (g.name && !g.mig ? ' · ' + g.name : '')))));
    sel.dataset.keys = keys.join(',');
    if (current) sel.value = current;
    if (state.view === 'history' && !state.charts.length) showHistory();
  }

  function chartColors() {
    const css = getComputedStyle(document.documentElement);
    const v = (n) => css.getPropertyValue(n).trim();
    return { text: v('--muted'), grid: v('--line'), mem: v('--c-mem'), util: v('--c-util'), temp: v('--c-temp') };
  }

  // chartSize is the size the charts take in #charts as it is laid out
  // now: its width less each chart's padding and border.
  function chartSize() {
    const width = Math.max(240, Math.floor($('charts').getBoundingClientRect().width) - 20);
    return { width, height: width < 500 ? 160 : 200 };
  }

  // fitCharts redraws the charts at the width #charts has now: a scroll
  // bar that appears, a window made narrower.
  function fitCharts() {
    if (state.view !== 'history' || !state.charts.length) return;
    const size = chartSize();
    if (size.width === state.charts[0].width) return;
    for (const c of state.charts) c.setSize(size);
  }

  // windowSeconds reads a window as the history's select writes it: 1h, 24h, 30m.
  const windowSeconds = (w) => parseFloat(w) * ({ s: 1, m: 60, h: 3600, d: 86400 }[w.slice(-1)] || 1);

  function summarize(label, unit, values) {
    const known = values.filter((v) => v !== null);
    if (!known.length) return label + ': no readings in this window.';
    const r = (v) => Math.round(v) + unit;
    return label + ': now ' + r(known[known.length - 1]) + ', lowest ' + r(Math.min(...known)) + ', highest ' + r(Math.max(...known)) + '.';
  }

  async function showHistory() {
    const sel = $('hist-gpu');
    if (state.params.has('gpu')) {
      const want = (state.params.get('host') || (state.session && state.session.host) || '') + '/' + state.params.get('gpu') +
        (state.params.get('uuid') ? '/' + state.params.get('uuid') : '');
      if ([...sel.options].some((o) => o.value === want)) sel.value = want;
    }
    if (!sel.value || typeof uPlot === 'undefined') {
      $('charts').replaceChildren(h('p', { class: 'empty' }, sel.value ? 'Loading the chart library…' : 'No GPU has reported yet.'));
      return;
    }
    // host/index[/uuid]: a host's name may hold a slash, a UUID (MIG-…) not
    // before its own.
    let v = sel.value, uuid = '';
    const mig = v.search(/\/MIG-/);
    if (mig >= 0) [v, uuid] = [v.slice(0, mig), v.slice(mig + 1)];
    const [host, index] = [v.slice(0, v.lastIndexOf('/')), v.slice(v.lastIndexOf('/') + 1)];
    const win = $('hist-window').value;
    const q = new URLSearchParams({ host, gpu: index, window: win });
    if (uuid) q.set('uuid', uuid);
    if (!state.charts.length) $('charts').replaceChildren(h('p', { class: 'empty loading', role: 'status' }, 'Loading the history…'));
    let data;
    try {
      data = await getJSON('/api/v1/history?' + q);
    } catch (e) {
      $('charts').replaceChildren(h('p', { class: 'error' }, 'Cannot read the history: ' + e.message));
      return;
    }
    // The time axis spans the window asked for, up to the last reading
    // (the server's clock), however little of it gpuwatch has seen.
    const end = data.times.length ? data.times[data.times.length - 1] : Math.floor(Date.now() / 1000);
    const span = [end - windowSeconds(win), end];
    // The minutes before gpuwatch first read the GPU are left out.
    const first = data.times.findIndex((_, i) => data.memory_used_percent[i] !== null || data.utilization_percent[i] !== null || data.temperature_c[i] !== null);
    if (first > 0) for (const k of ['times', 'memory_used_percent', 'utilization_percent', 'temperature_c']) data[k] = data[k].slice(first);
    for (const c of state.charts) c.destroy();
    state.charts = [];
    const colors = chartColors();
    const { width, height } = chartSize();
    const sync = uPlot.sync('gpu');
    const specs = [
      { key: 'memory_used_percent', label: 'Memory used', unit: '%', color: colors.mem, range: [0, 100] },
      { key: 'utilization_percent', label: 'Utilization', unit: '%', color: colors.util, range: [0, 100] },
      { key: 'temperature_c', label: 'Temperature', unit: ' °C', color: colors.temp, range: null },
    ];
    const boxes = specs.map((s) => {
      const box = h('div', { class: 'chart', role: 'group', 'aria-label': s.label + ' of ' + sel.options[sel.selectedIndex].text, 'data-series': s.key });
      box.append(h('h3', null, s.label), h('p', { class: 'sr-only' }, summarize(s.label, s.unit, data[s.key])));
      // A MIG instance has no temperature of its own (the card's is its
      // GPU's), and a GPU older than Hopper does not measure its activity.
      if (state.params.get('uuid') && data.times.length && data[s.key].every((v) => v === null)) {
        box.append(h('p', { class: 'hint', 'data-field': 'not-measured' }, s.key === 'temperature_c'
          ? 'A MIG instance has no temperature of its own: the card\'s is in its GPU\'s history.'
          : 'Not measured: this GPU does not measure a MIG instance\'s ' + s.label.toLowerCase() + ' (GPM needs a Hopper or newer GPU).'));
      }
      return box;
    });
    // Say why most of the window is empty: gpuwatch began reading the GPU
    // in it (a daemon just started), or has not read it at all.
    const since = data.times.length ? data.times[0] : null;
    const note = since === null || first < 0 ? 'No readings of this GPU in this window yet.'
      : since - span[0] > 2 * (data.step_seconds || 60) ? 'Readings since ' + fmtTime(since * 1000) + ', when gpuwatch first read this GPU in this window.' : '';
    $('charts').replaceChildren(...(note ? [h('p', { class: 'hint', id: 'history-note' }, note)] : []), ...boxes);
    specs.forEach((s, i) => {
      const opts = {
        width, height,
        cursor: { sync: { key: sync.key }, drag: { x: true, y: false } },
        legend: { live: true },
        scales: { x: { time: true, range: () => span }, y: s.range ? { range: s.range } : { auto: true } },
        axes: [
          { stroke: colors.text, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid } },
          { stroke: colors.text, size: 64, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid }, values: (u, vals) => vals.map((v) => +v.toFixed(1) + s.unit.trim()) },
        ],
        series: [
          { label: 'time' },
          { label: s.label, stroke: s.color, width: 2, fill: s.color + '22', spanGaps: false, value: (u, v) => (v === null ? '–' : v.toFixed(1) + s.unit) },
        ],
        hooks: { draw: [(u) => {
          boxes[i].dataset.drawn = String(u.data[0].length);
          boxes[i].dataset.from = String(u.scales.x.min);
          boxes[i].dataset.to = String(u.scales.x.max);
        }] },
      };
      state.charts.push(new uPlot(opts, [data.times, data[s.key]], boxes[i]));
    });
  }

  // ---- digest
  function fillDigests() {
    const sel = $('digest-name');
    sel.replaceChildren(...state.session.digests.map((n) => h('option', { value: n }, n + ' (its last run)')), h('option', { value: '' }, 'usage, any window'));
  }

  async function showDigest(ev) {
    if (ev) ev.preventDefault();
    const q = new URLSearchParams();
    if ($('digest-name').value) q.set('name', $('digest-name').value);
    if ($('digest-window').value.trim()) q.set('window', $('digest-window').value.trim());
    const out = $('digest');
    out.textContent = 'Loading…';
    try {
      const resp = await api('/api/v1/digest?' + q);
      if (!resp.ok) throw await failure(resp);
      out.textContent = await resp.text();
    } catch (e) {
      out.textContent = 'No digest: ' + e.message;
    }
  }

  // ---- live: ask for the GPUs again every refresh_seconds while the page shows
  async function refresh() {
    clearTimeout(state.timer);
    try {
      state.status = await getJSON('/api/v1/status');
      problem('');
      renderNow();
      renderAlerts();
      const at = state.status.time ? new Date(state.status.time) : null;
      $('updated').textContent = at ? 'Sample of ' + at.toLocaleTimeString() : 'No sample yet';
      $('updated').dataset.time = state.status.time || '';
    } catch (e) {
      problem('Cannot reach gpuwatch (' + e.message + '); trying again.');
    }
    if (!document.hidden) state.timer = setTimeout(refresh, state.session.refresh_seconds * 1000);
  }

  async function start() {
    try {
      state.session = await getJSON('/web/session');
    } catch (e) {
      problem('Cannot reach gpuwatch: ' + e.message);
      setTimeout(start, 5000);
      return;
    }
    const s = state.session;
    $('host').textContent = s.host + (s.hub ? ' (fleet)' : '');
    if (s.login) {
      $('logout').hidden = false;
      $('user').textContent = '(' + s.user + ')';
    }
    $('sil-by').value = s.user || '';
    $('rule-names').replaceChildren(...s.rules.map((r) => h('option', { value: r })));
    fillDigests();
    route(false);
    refresh();
  }

  window.addEventListener('hashchange', () => route(true));
  document.addEventListener('visibilitychange', () => { if (!document.hidden && state.session) refresh(); });
  if (typeof ResizeObserver !== 'undefined') new ResizeObserver(fitCharts).observe($('charts'));
  window.addEventListener('resize', () => {
    clearTimeout(state.resizeTimer);
    state.resizeTimer = setTimeout(() => { if (state.view === 'history') showHistory(); }, 250);
  });
  $('filter').addEventListener('input', renderNow);
  $('only-free').addEventListener('change', renderNow);
  $('filter-form').addEventListener('submit', (ev) => ev.preventDefault());
  $('summary').addEventListener('click', (ev) => {
    const target = ev.target.closest && ev.target.closest('[data-target]');
    if (!target || !$(target.dataset.target)) return;
    ev.preventDefault();
    $(target.dataset.target).scrollIntoView({ block: 'center' });
    $(target.dataset.target).setAttribute('tabindex', '-1');
    $(target.dataset.target).focus();
  });
  $('silence-form').addEventListener('submit', addSilence);
  $('history-form').addEventListener('change', () => { state.params = new URLSearchParams(); showHistory(); });
  $('history-form').addEventListener('submit', (ev) => ev.preventDefault());
  $('digest-form').addEventListener('submit', showDigest);
  $('digest-name').addEventListener('change', showDigest);
  $('logout').addEventListener('click', async () => {
    try { await api('/logout', { method: 'POST' }); } finally { location.assign('/login'); }
  });
  for (const v of views) $('h-' + v).setAttribute('tabindex', '-1');
  start();
})();
