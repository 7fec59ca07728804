'use strict';
/*
 * Coop dashboard: a single page over the dashboard's JSON API. Every value from the server is put in the page as
 * text (textContent, properties), never as markup: failure messages and payloads are user input.
 */
(() => {
  const STATUS = {
    RUNNABLE: { icon: '▶', label: 'runnable' },
    WAITING: { icon: '◷', label: 'waiting' },
    PARKED: { icon: '‖', label: 'parked' },
    COMMITTED: { icon: '✓', label: 'committed' },
    ROLLED_BACK: { icon: '↺', label: 'rolled back' },
    ROLLBACK_FAILED: { icon: '✗', label: 'rollback failed' },
    UNHANDLED: { icon: '∅', label: 'unhandled' },
    RUNNING: { icon: '▶', label: 'running' },
  };
  const ORDER = ['RUNNABLE', 'WAITING', 'PARKED', 'COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED'];
  const KIND = {
    STEP: { icon: '✓', label: 'step' },
    CHILD_FAILURE_HANDLER: { icon: '↪', label: 'child-failure handler' },
    ROLLBACK_CHILDREN: { icon: '↺', label: 'rollback of children' },
    COMPENSATION: { icon: '↺', label: 'compensation' },
    ATTEMPT_FAILED: { icon: '✗', label: 'failed attempt' },
    PARKED: { icon: '‖', label: 'parked' },
    RETRIED: { icon: '↻', label: 'retried by an operator' },
    MARKED_DONE: { icon: '✓', label: 'marked done by an operator' },
  };
  const OWN_STYLE = new Set(['ATTEMPT_FAILED', 'PARKED', 'RETRIED', 'MARKED_DONE']); // drawn as themselves, not as failures
  const FINISHED = new Set(['COMMITTED', 'ROLLED_BACK', 'ROLLBACK_FAILED']);
  const MANY_CHILDREN = 50;
  const TIMELINE_ROWS = 2000;
  const LIVE_MS = 1500;

  let session = null;
  let liveTimer = null;
  let renderToken = 0;
  const openState = new Map(); // run id -> open, kept across live refreshes
  const ioOpen = new Set(); // run ids whose input and output are shown

  // ---- DOM helpers: text only

  /** A run's saga, with its version when it is not 1 (a versioned saga: "billing v2"), as the text renderer writes it. */
  function sagaLabel(run) {
    return run.sagaVersion > 1 ? run.saga + ' v' + run.sagaVersion : run.saga;
  }

  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') el.className = v;
        else if (k === 'text') el.textContent = v;
        else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
        else if (k === 'style') Object.assign(el.style, v);
        else if (k in el && typeof v !== 'string') el[k] = v;
        else el.setAttribute(k, String(v));
      }
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  function badge(status) {
    const s = STATUS[status] || { icon: '?', label: String(status).toLowerCase() };
    return h('span', { class: 'badge s-' + status, title: status },
      h('span', { class: 'icon', 'aria-hidden': 'true', text: s.icon }), s.label);
  }

  /** A full id (time-ordered ids share their first characters for a minute: never cut them). */
  function idSpan(id) {
    return h('code', { class: 'mono id', title: id, text: id ? String(id) : '' });
  }

  /** A button that copies an id to the clipboard (outside links: a button may not sit in one). */
  function copyButton(id) {
    if (!id) return null;
    return h('button', { type: 'button', class: 'copy', title: 'Copy ' + id, 'aria-label': 'Copy id ' + id,
      onclick: e => {
        e.preventDefault();
        e.stopPropagation();
        const done = () => { e.target.textContent = 'copied'; setTimeout(() => { e.target.textContent = 'copy'; }, 1200); };
        if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(String(id)).then(done, () => {});
        else flash('Id: ' + id);
      } }, 'copy');
  }

  function time(t) {
    if (!t) return '';
    const d = new Date(t);
    if (isNaN(d)) return String(t);
    const pad = (n, w = 2) => String(n).padStart(w, '0');
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':'
      + pad(d.getMinutes()) + ':' + pad(d.getSeconds()) + '.' + pad(d.getMilliseconds(), 3);
  }

  function duration(ms) {
    if (ms === null || ms === undefined) return '';
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(2) + ' s';
    const m = Math.floor(ms / 60000);
    return m + ' m ' + String(Math.round((ms % 60000) / 1000)).padStart(2, '0') + ' s';
  }

  function shortType(type) {
    if (!type) return '';
    const i = type.lastIndexOf('.');
    return i >= 0 ? type.slice(i + 1) : type;
  }

  function firstLine(s) {
    if (!s) return '';
    const i = s.indexOf('\n');
    return i >= 0 ? s.slice(0, i) + ' …' : s;
  }

  function flash(text, isError) {
    const f = document.getElementById('flash');
    clear(f);
    if (text) f.appendChild(h('span', { class: isError ? 'error' : '', text }));
  }

  // ---- the API

  async function api(path) {
    const r = await fetch('api/' + path, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
    return answer(r);
  }

  async function post(path, body) {
    const r = await fetch('api/' + path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-Coop-Csrf': session.csrf || '' },
      body: JSON.stringify(body),
    });
    return answer(r);
  }

  async function answer(r) {
    if (r.status === 401) {
      location.href = 'login';
      throw new Error('Not logged in');
    }
    let body = null;
    try {
      body = await r.json();
    } catch (e) {
      body = null;
    }
    if (!r.ok) throw new Error((body && body.error) || ('HTTP ' + r.status));
    return body;
  }

  const q = encodeURIComponent;

  // ---- routing

  function route() {
    const hash = location.hash || '#/runs';
    const [path, query] = hash.slice(1).split('?');
    const params = new URLSearchParams(query || '');
    const parts = path.split('/').filter(Boolean);
    return { page: parts[0] || 'runs', arg: parts[1] ? decodeURIComponent(parts[1]) : null, params };
  }

  async function render() {
    stopLive();
    const token = ++renderToken;
    const r = route();
    document.querySelectorAll('header nav a').forEach(a => {
      if (a.dataset.page === r.page) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    });
    const main = document.getElementById('main');
    try {
      if (r.page === 'h' && r.arg) await hierarchyPage(main, { message: r.arg, highlight: r.params.get('run') }, token);
      else if (r.page === 'run' && r.arg) await hierarchyPage(main, { lineage: r.arg.split(/[.,]/) }, token);
      else if (r.page === 'schedules') await schedulesPage(main, token);
      else if (r.page === 'counts') await countsPage(main, r.params, token);
      else if (r.page === 'joins') await joinsPage(main, r.params, token);
      else if (r.page === 'search' && r.arg) await searchPage(main, r.arg, r.params, token);
      else await runsPage(main, r.params, token);
    } catch (e) {
      if (token !== renderToken) return;
      clear(main).appendChild(h('p', { class: 'error', role: 'alert', text: 'Could not load this page: ' + e.message }));
    }
  }

  function current(token) {
    return token === renderToken;
  }

  // ---- runs

  async function runsPage(main, params, token) {
    const filter = {
      status: params.get('status') || '', saga: params.get('saga') || '', topic: params.get('topic') || '',
      since: params.get('since') || '', before: params.get('before') || '', failureType: params.get('failureType') || '',
    };
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(filter)) if (v) query.set(k, v);
    query.set('limit', '50');
    const [data, parked] = await Promise.all([api('runs?' + query), api('parked')]);
    if (!current(token)) return;
    document.title = 'Runs · Coop';
    clear(main);
    main.appendChild(h('h1', { text: 'Runs' }));

    const chips = h('div', { class: 'chips', role: 'group', 'aria-label': 'Counts by status' });
    const total = Object.values(data.counts).reduce((a, b) => a + b, 0);
    chips.appendChild(h('button', {
      type: 'button', 'aria-pressed': String(!filter.status),
      onclick: () => go('runs', { ...filter, status: '', before: '' }),
    }, 'All ', h('span', { class: 'chip-count', text: String(total) })));
    for (const s of ORDER) {
      const n = data.counts[s] || 0;
      chips.appendChild(h('button', {
        type: 'button', 'aria-pressed': String(filter.status === s),
        onclick: () => go('runs', { ...filter, status: s, before: '' }),
      }, badge(s), ' ', h('span', { class: 'chip-count', text: String(n) })));
    }
    main.appendChild(chips);
    main.appendChild(filterForm(filter));
    if (operator() && (filter.saga || filter.topic)) main.appendChild(selectionBar(filter, data.counts));

    if (parked.length) main.appendChild(parkedPanel(parked));
    const tasks = await api('tasks?limit=50').catch(() => null);
    if (!current(token)) return;
    if (tasks && tasks.tasks.length) main.appendChild(tasksPanel(tasks.tasks));

    const checked = new Map(); // run id -> run: the rows ticked for an action on them
    const picked = operator() ? checkedBar(checked) : null;
    if (picked) main.appendChild(picked.bar);
    const table = h('table', { class: 'runs' },
      h('thead', null, h('tr', null, operator() ? h('th', null, h('span', { class: 'sr', text: 'Select' })) : null,
        ['Created', 'Status', 'Saga', 'Topic', 'Failure', 'Run'].map(t => h('th', { text: t })))));
    const body = h('tbody');
    for (const run of data.runs) {
      const root = run.lineage[0];
      body.appendChild(h('tr', null,
        picked ? h('td', null, h('input', { type: 'checkbox', class: 'pick', 'aria-label': 'Select run ' + run.runId,
          onchange: e => { if (e.target.checked) checked.set(run.runId, run); else checked.delete(run.runId); picked.update(); } })) : null,
        h('td', { class: 'mono', text: time(run.createdAt) }),
        h('td', null, badge(run.running ? 'RUNNING' : run.status),
          run.running ? h('span', { class: 'muted running-now', text: ' ' + run.running.step + (run.running.engine ? ' on ' + run.running.engine : '')
            + ' since ' + time(run.running.since) }) : null),
        h('td', null, h('a', { href: '#/h/' + q(root) + '?run=' + q(run.runId), text: sagaLabel(run) })),
        h('td', { text: run.topic }),
        h('td', { class: 'msg', text: firstLine(run.failureMessage) }),
        h('td', null, h('a', { href: '#/run/' + run.lineage.join('.'), title: 'This run and what it caused' }, idSpan(run.runId)), copyButton(run.runId))));
    }
    if (!data.runs.length) body.appendChild(h('tr', null, h('td', { colspan: operator() ? '7' : '6', class: 'muted', text: 'No runs match.' })));
    table.appendChild(body);
    main.appendChild(h('div', { class: 'scroll' }, table));

    const pager = h('div', { class: 'toolbar' });
    if (filter.before) pager.appendChild(h('button', { type: 'button', onclick: () => go('runs', { ...filter, before: '' }) }, '⇤ Newest'));
    if (data.runs.length === 50) {
      const last = data.runs[data.runs.length - 1].createdAt;
      pager.appendChild(h('button', { type: 'button', id: 'older', onclick: () => go('runs', { ...filter, before: last }) }, 'Older →'));
    }
    pager.appendChild(h('button', { type: 'button', onclick: render }, '↻ Refresh'));
    main.appendChild(pager);
  }

  function filterForm(filter) {
    const status = h('select', { name: 'status', id: 'f-status' },
      h('option', { value: '', text: 'any' }), ORDER.map(s => h('option', { value: s, text: STATUS[s].label })));
    status.value = filter.status;
    const saga = h('input', { name: 'saga', id: 'f-saga', value: filter.saga, placeholder: 'saga name' });
    const topic = h('input', { name: 'topic', id: 'f-topic', value: filter.topic, placeholder: 'topic' });
    const since = h('input', { name: 'since', id: 'f-since', type: 'datetime-local', step: '1' });
    if (filter.since) since.value = localInput(filter.since);
    const failure = h('input', { name: 'failureType', id: 'f-failure', value: filter.failureType, placeholder: 'e.g. IOException' });
    const form = h('form', { class: 'toolbar', 'aria-label': 'Filter runs' },
      h('label', null, 'Status', status), h('label', null, 'Saga', saga), h('label', null, 'Topic', topic),
      h('label', null, 'Created since', since), h('label', null, 'Failure type', failure), h('button', { type: 'submit' }, 'Filter'),
      h('button', { type: 'button', onclick: () => go('runs', {}) }, 'Clear'));
    form.addEventListener('submit', e => {
      e.preventDefault();
      go('runs', {
        status: status.value, saga: saga.value.trim(), topic: topic.value.trim(),
        since: since.value ? new Date(since.value).toISOString() : '', failureType: failure.value.trim(),
      });
    });
    return form;
  }

  const UNFINISHED = ['RUNNABLE', 'WAITING', 'PARKED', 'HELD'];

  /** The filtered runs as a whole: cancel the unfinished ones or roll back the committed ones, counted first. */
  function selectionBar(filter, counts) {
    const inStatus = s => !filter.status || filter.status === s ? (counts[s] || 0) : 0;
    const cancellable = UNFINISHED.reduce((a, s) => a + inStatus(s), 0);
    const committed = inStatus('COMMITTED');
    const selection = { saga: filter.saga, topic: filter.topic, status: filter.status, since: filter.since, failureType: filter.failureType };
    const words = Object.entries(selection).filter(([, v]) => v).map(([k, v]) => k + ' ' + v).join(', ');
    return h('div', { class: 'actions bulk', id: 'selection', role: 'group', 'aria-label': 'Act on the filtered runs' },
      h('button', { type: 'button', class: 'small', id: 'cancel-selection', disabled: !cancellable,
        onclick: () => confirmSelection('cancel-selection', selection, words, cancellable) }, '✗ Cancel ' + cancellable + ' unfinished'),
      h('button', { type: 'button', class: 'small', id: 'rollback-selection', disabled: !committed,
        onclick: () => confirmSelection('rollback-selection', selection, words, committed) }, '↺ Roll back ' + committed + ' committed'));
  }

  /** The ticked rows as a whole: cancel the unfinished ones or roll back the committed ones, one audited action each. */
  function checkedBar(checked) {
    const cancel = h('button', { type: 'button', class: 'small', id: 'cancel-checked', disabled: true });
    const rollback = h('button', { type: 'button', class: 'small', id: 'rollback-checked', disabled: true });
    const bar = h('div', { class: 'actions bulk', id: 'checked', role: 'group', 'aria-label': 'Act on the ticked runs' },
      h('span', { class: 'muted', text: 'Ticked runs: ' }), cancel, rollback);
    const plural = n => n + ' run' + (n === 1 ? '' : 's');
    const update = () => {
      const runs = [...checked.values()];
      const open = runs.filter(r => !FINISHED.has(r.status));
      const committed = runs.filter(r => r.status === 'COMMITTED');
      cancel.textContent = '✗ Cancel ' + plural(open.length) + ' ticked';
      rollback.textContent = '↺ Roll back ' + plural(committed.length) + ' ticked';
      cancel.disabled = !open.length;
      rollback.disabled = !committed.length;
      cancel.onclick = () => confirmChecked('cancel', open);
      rollback.onclick = () => confirmChecked('rollback', committed);
    };
    update();
    return { bar, update };
  }

  function confirmChecked(action, runs) {
    const cancel = action === 'cancel';
    const n = runs.length + ' run' + (runs.length === 1 ? '' : 's');
    openDialog({
      title: (cancel ? 'Cancel ' : 'Roll back ') + n + ' (' + names(runs) + ')?',
      what: cancel
        ? 'Each ticked run gives up at its next step boundary and rolls back, running its compensations, with everything it caused.'
        : 'Each ticked run rolls back its whole history, children first, running compensations.',
      effects: ['One action per run, each with an audit entry with your name and this reason.'],
      ok: (cancel ? 'Cancel ' : 'Roll back ') + n, bodies: runs.map(r => ({ action, lineage: r.lineage })),
    });
  }

  function confirmSelection(action, selection, words, count) {
    const cancel = action === 'cancel-selection';
    openDialog({
      title: (cancel ? 'Cancel ' : 'Roll back ') + count + ' run' + (count === 1 ? '' : 's') + ' (' + words + ')?',
      what: cancel
        ? 'Every unfinished run of the selection gives up at its next step boundary and rolls back, running its compensations, with everything it caused.'
        : 'Every committed run of the selection rolls back its whole history, children first, running compensations.',
      effects: ['Done in batches of 1,000 runs, each its own transaction; runs that match by then are acted on too.',
        'Each hierarchy gets an audit entry with your name and this reason; each run an event in its log.'],
      ok: (cancel ? 'Cancel ' : 'Roll back ') + count + ' run' + (count === 1 ? '' : 's'), body: { action, selection },
    });
  }

  function localInput(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '';
    const pad = n => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' + pad(d.getHours()) + ':'
      + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  function go(page, params) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v) query.set(k, v);
    const s = query.toString();
    location.hash = '#/' + page + (s ? '?' + s : '');
  }

  function parkedPanel(parked) {
    const rows = parked.map(p => h('tr', null,
      h('td', null, badge('PARKED')),
      h('td', null, h('a', { href: '#/h/' + q(p.lineage[0]) + '?run=' + q(p.runId), text: p.saga })),
      h('td', { text: 'step ' + (p.step || p.stepIndex) + ', attempt ' + p.attempt }),
      h('td', { class: 'msg' }, p.failure ? [h('b', { text: shortType(p.failure.type) }), ': ', firstLine(p.failure.message)] : ''),
      h('td', { class: 'mono', text: time(p.createdAt) })));
    const sagas = [...new Set(parked.map(p => p.saga))];
    return h('section', { class: 'parked', 'aria-label': 'Parked runs' },
      h('h2', null, '‖ ' + parked.length + ' parked run' + (parked.length === 1 ? ' waits' : 's wait') + ' for an operator'),
      operator() ? h('div', { class: 'actions bulk' }, sagas.map(saga => h('button', { type: 'button', class: 'small retry-all',
        onclick: () => confirmRetryAll(saga).catch(e => flash(e.message, true)) }, '↻ Retry all parked runs of ' + saga))) : null,
      h('div', { class: 'scroll' }, h('table', null,
        h('thead', null, h('tr', null, ['Status', 'Saga', 'Where', 'Reason', 'Created'].map(t => h('th', { text: t })))),
        h('tbody', null, rows))));
  }

  // Open external tasks: work outside Coop that runs wait for; operators may complete or fail them (audited).
  function tasksPanel(tasks) {
    const rows = tasks.map(t => h('tr', null,
      h('td', null, h('a', { href: '#/h/' + q(t.rootMessageId) + '?run=' + q(t.runId), text: t.name })),
      h('td', { class: 'mono', text: t.key || '–' }),
      h('td', { text: duration(t.ageSeconds * 1000) }),
      h('td', { class: 'mono', text: t.deadline ? time(t.deadline) : '–' }),
      h('td', null, operator() ? [
        h('button', { type: 'button', class: 'complete-task', onclick: () => confirmTask('complete-task', t) }, '✓ Complete'),
        h('button', { type: 'button', class: 'fail-task', onclick: () => confirmTask('fail-task', t) }, '✗ Fail')] : '')));
    return h('section', { class: 'tasks', 'aria-label': 'Open external tasks' },
      h('h2', { id: 'tasks-title' }, h('span', { 'aria-hidden': 'true', text: '◷ ' }), tasks.length + ' open external task'
        + (tasks.length === 1 ? ' waits' : 's wait') + ' for the outside world'),
      h('div', { class: 'scroll' }, h('table', null,
        h('thead', null, h('tr', null, ['Task', 'Key', 'Age', 'Deadline', ''].map(c => h('th', { text: c })))),
        h('tbody', null, rows))));
  }

  /** Complete (with a JSON result typed in the dialog, checked as it is typed and repeated as sent) or fail a task. */
  function confirmTask(action, task) {
    const complete = action === 'complete-task';
    openDialog({
      title: (complete ? 'Complete ' : 'Fail ') + task.name + (task.key ? ' (' + task.key + ')' : '') + '?',
      what: complete
        ? 'The run that waits for this task goes on with the result below, as if the outside world had completed it.'
        : 'The task fails: a child failure of the step that opened it (its handler may recover; otherwise the run rolls back).',
      effects: [], ok: complete ? 'Complete it' : 'Fail it',
      result: complete ? '"approved"' : null,
      body: complete ? { action, task: task.token } : { action, task: task.token },
    });
  }

  // ---- a hierarchy

  async function hierarchyPage(main, target, token) {
    const t0 = performance.now();
    const message = target.message || target.lineage[0];
    const [data, events] = await Promise.all([
      target.message ? api('hierarchy?message=' + q(target.message)) : api('run?lineage=' + q(target.lineage.join(','))),
      api('events?message=' + q(message) + '&limit=500')]);
    if (!current(token)) return;
    const t1 = performance.now();
    const view = target.message ? data.hierarchy : {
      messageId: data.run.messageId, topic: data.run.topic, launchedAt: data.run.createdAt,
      finished: flatten([data.run]).every(r => FINISHED.has(r.status)), outcome: null, runs: [data.run],
      scope: data.run.lineage,
    };
    if (!target.message) view.outcome = view.finished ? data.run.status : null;
    const scrollY = window.scrollY;
    const focusId = document.activeElement && document.activeElement.id;
    clear(main);
    drawHierarchy(main, view, data, events.events, target);
    main.dataset.loadMs = String(Math.round(t1 - t0)); // how long the page took: read by the measurement
    main.dataset.drawMs = String(Math.round(performance.now() - t1));
    if (focusId && document.getElementById(focusId)) document.getElementById(focusId).focus({ preventScroll: true });
    window.scrollTo(0, scrollY);
    if (!view.finished) {
      const pause = Math.max(LIVE_MS, 3 * (performance.now() - t0)); // a large tree is read less often
      liveTimer = setTimeout(() => {
        if (current(token) && !document.getElementById('confirm').open) {
          hierarchyPage(main, target, token).catch(e => flash('Live update failed: ' + e.message, true));
        } else if (current(token)) {
          liveTimer = setTimeout(() => hierarchyPage(main, target, token), pause);
        }
      }, pause);
    }
  }

  function stopLive() {
    if (liveTimer) clearTimeout(liveTimer);
    liveTimer = null;
  }

  function flatten(runs) {
    const all = [];
    const stack = [...runs].reverse().map(r => [r, 0]);
    while (stack.length) {
      const [r, depth] = stack.pop();
      all.push(Object.assign(r, { _depth: depth }));
      for (let i = r.children.length - 1; i >= 0; i--) stack.push([r.children[i], depth + 1]);
    }
    return all;
  }

  function drawHierarchy(main, view, data, events, target) {
    const all = flatten(view.runs);
    const running = !view.finished;
    document.title = (view.scope ? 'Run ' : '') + view.topic + ' · Coop';
    main.appendChild(h('h1', null, view.scope ? 'Run of ' + view.runs[0].saga + ' on ' + view.topic : view.topic));
    const ends = all.map(r => r.finishedAt).filter(Boolean).map(t => Date.parse(t));
    const took = view.finished && ends.length ? Math.max(...ends) - Date.parse(view.launchedAt) : null;
    main.appendChild(h('div', { class: 'meta' },
      h('span', null, 'message ', h('code', { class: 'mono', id: 'message-id', text: view.messageId }), copyButton(view.messageId)),
      view.scope ? h('span', null, h('a', { href: '#/h/' + q(view.scope[0]) }, '↑ whole hierarchy')) : null,
      h('span', null, 'launched ', h('b', { text: time(view.launchedAt) })),
      running ? h('span', { class: 'badge s-RUNNING', id: 'outcome' }, h('span', { class: 'live', text: 'live: running' }))
        : h('span', { id: 'outcome' }, badge(view.outcome || 'COMMITTED')),
      took !== null ? h('span', null, 'in ', h('b', { text: duration(took) })) : null,
      h('span', null, h('b', { text: String(countRuns(all)) }), ' runs',
        countRuns(all) > all.length ? h('span', { class: 'muted', text: ' (' + all.length + ' listed; fan-outs counted)' }) : null)));
    main.appendChild(actionBar(view, all, running));

    const failures = view.runs.filter(r => r.failure);
    if (failures.length) {
      main.appendChild(h('h2', { id: 'trace-title' }, 'Distributed stack trace'));
      const trace = h('section', { id: 'stack-trace', 'aria-labelledby': 'trace-title' });
      const seen = new Set();
      for (const r of failures) trace.appendChild(failureBlock(r.failure, seen, true));
      main.appendChild(trace);
    }

    main.appendChild(h('h2', { id: 'tree-title' }, 'Tree'));
    const contexts = contextIndex(events);
    const parked = new Map((data.parked || []).map(p => [p.runId, p]));
    const tree = h('section', { class: 'tree', id: 'tree', 'aria-labelledby': 'tree-title' });
    const ctx = { contexts, parked, highlight: target.highlight, finished: view.finished, large: all.length > 200, now: data.now };
    for (const r of view.runs) tree.appendChild(runNode(r, 0, ctx));
    if (!view.runs.length) tree.appendChild(h('p', { class: 'muted', text: 'No saga handled this message.' }));
    main.appendChild(tree);

    main.appendChild(h('h2', { id: 'timeline-title' }, 'Timeline'));
    main.appendChild(timeline(view, all, data.now));

    const compensations = all.flatMap(r => r.steps.filter(s => s.kind === 'COMPENSATION').map(s => [r, s]))
      .sort((a, b) => Date.parse(a[1].startedAt || a[1].endedAt) - Date.parse(b[1].startedAt || b[1].endedAt));
    if (compensations.length) {
      main.appendChild(h('h2', null, 'Compensations, in the order they ran'));
      main.appendChild(h('ol', { id: 'compensations' }, compensations.map(([r, s]) => h('li', null,
        h('b', { text: r.saga }), ': ', s.name.replace(/^Rollback of /, ''), ' ',
        h('span', { class: 'muted', text: (s.engine || '') + ' ' + time(s.startedAt) + ' ' + duration(s.durationMs) }),
        s.failure ? h('span', { class: 'error', text: ' ✗ ' + shortType(s.failure.type) + ': ' + firstLine(s.failure.message) }) : null))));
    }

    main.appendChild(h('h2', { id: 'audit-title' }, 'Audit'));
    main.appendChild(auditTable(data.audit || [], all.filter(r => r.task && r.task.settledBy)));

    main.appendChild(h('h2', { id: 'events-title' }, 'Events'));
    main.appendChild(eventsSection(view.messageId, events));
  }

  /** Every run of the tree: the listed ones, and those a bounded read only counted (RunView.collapsed). */
  function countRuns(all) {
    let n = all.length;
    for (const r of all) {
      const counted = (r.collapsed || []).reduce((a, c) => a + c.total, 0);
      if (counted) n += counted - r.children.length;
    }
    return n;
  }

  function actionBar(view, all, running) {
    const bar = h('div', { class: 'actions', id: 'actions' });
    if (!session || session.role !== 'OPERATOR') {
      if (session) bar.appendChild(h('span', { class: 'muted', text: 'Read-only: you may look, not act (role ' + session.role + ').' }));
      return bar;
    }
    const scope = view.scope || null;
    const label = scope ? 'this run' : 'the whole hierarchy';
    if (running) {
      bar.appendChild(h('button', { type: 'button', id: 'cancel', class: 'danger', onclick: () => confirmAction('cancel', scope, view.messageId, all, label) }, '■ Cancel ' + label));
    } else if (view.outcome === 'COMMITTED') {
      bar.appendChild(h('button', { type: 'button', id: 'rollback', class: 'danger', onclick: () => confirmAction('rollback', scope, view.messageId, all, label) }, '↺ Roll back ' + label));
    }
    return bar;
  }

  function failureBlock(f, seen, top) {
    const key = JSON.stringify(f);
    const box = h('div', { class: top ? 'trace' : 'cause' });
    const head = h('div', { class: 'failure-line' },
      top ? null : h('span', { class: 'caused-by', text: 'caused by ' }),
      h('span', { class: 'type', title: f.type, text: shortType(f.type) }), ': ',
      h('span', { class: 'message', text: f.message || '' }),
      f.source ? h('span', { class: 'muted', text: '  (in ' + f.source + ')' }) : null);
    box.appendChild(head);
    if (seen.has(key)) {
      box.appendChild(h('div', { class: 'muted', text: '(the same failure as above)' }));
      return box;
    }
    seen.add(key);
    if (f.stackTrace && f.stackTrace.length) {
      box.appendChild(h('details', null, h('summary', { text: f.stackTrace.length + ' stack frames' }),
        h('pre', { text: f.stackTrace.map(fr => 'at ' + (fr.className ? fr.className + '.' : '') + (fr.functionName || '?')
          + '(' + (fr.fileName || '?') + (fr.lineNumber != null ? ':' + fr.lineNumber : '') + ')').join('\n') })));
    }
    for (const c of f.causes || []) box.appendChild(failureBlock(c, seen, false));
    return box;
  }

  /** The contexts of the log: what each message's runs start with (EMITTED), and what steps changed (SUSPENDED). */
  function contextIndex(events) {
    const launched = new Map();
    const changed = new Map();
    for (const e of events) {
      if (e.type === 'EMITTED' && e.context) launched.set(e.messageId, e.context);
      if (e.type !== 'SUSPENDED' || !e.step || !e.lineage) continue;
      const key = e.lineage.join(',') + '|' + e.step;
      if (!changed.has(key)) changed.set(key, []);
      changed.get(key).push(e);
    }
    return { launched, changed };
  }

  function isOpen(run, depth, ctx) {
    if (openState.has(run.runId)) return openState.get(run.runId);
    if (ctx.highlight && ctx.highlight === run.runId) return true;
    return depth < (ctx.large ? 1 : 2) || run.status !== 'COMMITTED';
  }

  function runNode(run, depth, ctx) {
    const details = h('details', { class: 'run' + (ctx.highlight === run.runId ? ' highlight' : ''), id: 'run-' + run.runId });
    details.dataset.runId = run.runId;
    const failed = run.failure && !run.rollingBack ? '✗' : run.failure ? '↺' : null;
    details.appendChild(h('summary', null,
      badge(run.running ? 'RUNNING' : run.status), h('span', { class: 'saga', text: sagaLabel(run) }), h('span', { class: 'muted', text: 'on ' + run.topic }),
      h('span', { text: duration(run.durationMs) }),
      run.running ? h('span', { class: 'running-now', text: '▶ ' + run.running.step + (run.running.engine ? ' on ' + run.running.engine : '')
        + ', attempt ' + run.running.attempt }) : null,
      run.waitingFor ? h('span', { class: 'muted waiting-for', text: '(' + run.waitingFor + ')' }) : null,
      run.task ? h('span', { class: 'task-story', text: taskStory(run.task, ctx.now) }) : null,
      run.failure ? h('span', { class: 'error', text: failed + ' ' + shortType(run.failure.type) }) : null,
      h('a', { href: '#/run/' + run.lineage.join('.'), title: 'Open this run (deep link by lineage)' }, idSpan(run.runId)), copyButton(run.runId)));
    let built = false;
    const build = () => {
      if (built) return;
      built = true;
      details.appendChild(runBody(run, depth, ctx));
    };
    if (isOpen(run, depth, ctx)) {
      details.open = true;
      build();
    }
    details.addEventListener('toggle', () => {
      openState.set(run.runId, details.open);
      if (details.open) build();
    });
    return details;
  }

  function runBody(run, depth, ctx) {
    const body = h('div', { class: 'run-body' });
    if (run.failure) {
      body.appendChild(h('div', { class: 'failure-line' },
        h('span', { class: 'type', title: run.failure.type, text: (run.rollingBack && run.status !== 'PARKED' ? '↺ ' : '✗ ') + shortType(run.failure.type) }), ': ',
        h('span', { class: 'message failure-message', text: run.failure.message || '' }),
        run.failure.source ? h('span', { class: 'muted', text: '  (in ' + run.failure.source + ')' }) : null));
    }
    const parked = ctx.parked.get(run.runId);
    if (parked) {
      body.appendChild(h('div', { class: 'parked' },
        h('b', { text: '‖ Parked at step ' + (parked.step || parked.stepIndex) + ' after attempt ' + parked.attempt }),
        parked.failure ? [': ', h('span', { text: shortType(parked.failure.type) + ': ' + (parked.failure.message || '') })] : null,
        operator() ? h('div', { class: 'actions' },
          h('button', { type: 'button', class: 'retry', onclick: () => confirmParked('retry', run, parked) }, '↻ Retry now'),
          h('button', { type: 'button', class: 'mark-done', onclick: () => confirmParked('mark-done', run, parked) }, '✓ Mark step done')) : null));
    }
    if (operator() && depth > 0) {
      const all = flatten([run]);
      if (!FINISHED.has(run.status)) {
        body.appendChild(h('div', { class: 'actions' }, h('button', { type: 'button', class: 'small',
          onclick: () => confirmAction('cancel', run.lineage, run.lineage[0], all, 'this run') }, '■ Cancel this run')));
      } else if (run.status === 'COMMITTED' && ctx.finished) {
        body.appendChild(h('div', { class: 'actions' }, h('button', { type: 'button', class: 'small',
          onclick: () => confirmAction('rollback', run.lineage, run.lineage[0], all, 'this run') }, '↺ Roll back this run')));
      }
    }
    body.appendChild(ioPanel(run));
    if (run.steps.length || run.running) body.appendChild(stepsTable(run, ctx));
    body.appendChild(childrenOf(run, depth, ctx));
    return body;
  }

  /**
   * The run's input (its message's payload) and output (its result), read from the server when opened: masked fields
   * show as "***" (the server masks them), long values are cut until "Show the whole values".
   */
  function ioPanel(run) {
    const box = h('details', { class: 'io', id: 'io-' + run.runId }, h('summary', { text: 'Input and output' }));
    const load = async full => {
      const data = await api('io?message=' + q(run.messageId) + '&run=' + q(run.runId) + (full ? '&full=true' : ''));
      clear(box).appendChild(h('summary', { text: 'Input and output' }));
      for (const [label, key] of [['Payload', 'payload'], ['Result', 'result']]) {
        const v = data[key];
        const cut = data[key + 'Cut'];
        box.appendChild(h('div', { class: 'io-value io-' + key }, h('b', { text: label + ' ' }),
          h('span', { class: 'muted', text: v === null ? '(none)' : data[key + 'Chars'] + ' characters' + (cut ? ', the first ' + v.length + ' shown' : '') }),
          v === null ? null : h('pre', { class: 'json', text: cut ? v + ' …' : JSON.stringify(v, null, 2) })));
      }
      if (data.payloadCut || data.resultCut) {
        box.appendChild(h('button', { type: 'button', class: 'small show-whole', onclick: () => load(true).catch(e => flash(e.message, true)) },
          'Show the whole values'));
      }
      box.open = true;
    };
    let loaded = false;
    const open = () => {
      ioOpen.add(run.runId);
      if (!loaded) {
        loaded = true;
        load(false).catch(e => flash(e.message, true));
      }
    };
    box.addEventListener('toggle', () => { if (box.open) open(); else ioOpen.delete(run.runId); });
    if (ioOpen.has(run.runId)) open(); // kept open across live refreshes
    return box;
  }

  function operator() {
    return session && session.role === 'OPERATOR';
  }

  /** A failed attempt standing for a long series: how many attempts before it were counted, not kept. */
  function omittedNote(s, omitted) {
    const n = omitted.get(s) || 0;
    return n > 0 ? ' (' + n + ' earlier attempt' + (n === 1 ? '' : 's') + ' counted, not kept)' : '';
  }

  function omittedAttempts(steps) {
    const omitted = new Map();
    const previous = new Map();
    for (const s of steps) {
      if (s.kind === 'ATTEMPT_FAILED') {
        omitted.set(s, s.attempt - (previous.get(s.name) || 0) - 1);
        previous.set(s.name, s.attempt);
      } else if (s.kind === 'STEP' || s.kind === 'RETRIED') {
        previous.delete(s.name);
      }
    }
    return omitted;
  }

  function stepsTable(run, ctx) {
    const omitted = omittedAttempts(run.steps);
    const counts = new Map();
    let seen = ctx.contexts.launched.get(run.messageId) || null; // the context the run started with
    const rows = run.steps.map(s => {
      const key = run.lineage.join(',') + '|' + s.name;
      const n = counts.get(key) || 0;
      counts.set(key, n + 1);
      const saw = seen;
      const after = (ctx.contexts.changed.get(key) || [])[n];
      if (after && after.context) seen = after.context; // the step changed it: later steps see the new one
      const ev = saw ? { context: saw } : null;
      const k = KIND[s.kind] || { icon: '·', label: s.kind };
      const icon = s.failure && !OWN_STYLE.has(s.kind) ? '✗' : k.icon;
      const ctxCell = h('td');
      if (ev && ev.context) {
        ctxCell.appendChild(h('details', null, h('summary', { text: 'context' }),
          h('pre', { text: JSON.stringify(ev.context, null, 2) })));
      }
      return h('tr', null,
        h('td', { class: 'kind' }, h('span', { 'aria-hidden': 'true', text: icon + ' ' }), k.label),
        h('td', null, s.name, s.iteration ? h('span', { class: 'muted', text: ' #' + s.iteration }) : null,
          s.attempt ? h('span', { class: 'muted attempt', text: ' attempt ' + s.attempt + omittedNote(s, omitted) }) : null),
        h('td', { class: 'mono', text: s.engine || '' }),
        h('td', { class: 'mono', text: time(s.startedAt) }),
        h('td', { text: duration(s.durationMs) }),
        h('td', { text: s.launched.length ? String(s.launched.length) : '' }),
        h('td', { class: 'msg' }, s.failure ? h('span', { class: 'error' }, '✗ ', shortType(s.failure.type), ': ',
          h('span', { class: 'failure-message', text: firstLine(s.failure.message) })) : null),
        ctxCell);
    });
    if (run.running) rows.push(runningRow(run.running, ctx.now));
    return h('div', { class: 'scroll' }, h('table', { class: 'steps' },
      h('thead', null, h('tr', null, ['Kind', 'Step', 'Engine', 'Started', 'Took', 'Launched', 'Failure', 'Context'].map(t => h('th', { text: t })))),
      h('tbody', null, rows)));
  }

  /** The step an engine executes right now: its row grows with every live refresh. */
  function runningRow(r, now) {
    const since = Date.parse(r.since);
    const took = now && since ? Math.max(Date.parse(now) - since, 0) : null;
    return h('tr', { class: 'running-step' },
      h('td', { class: 'kind' }, h('span', { 'aria-hidden': 'true', text: '▶ ' }), 'running'),
      h('td', { text: r.step }),
      h('td', { class: 'mono', text: r.engine || '' }),
      h('td', { class: 'mono', text: time(r.since) }),
      h('td', { text: took === null ? '' : duration(took) + ' so far' }),
      h('td'),
      h('td', { class: 'msg', text: 'attempt ' + r.attempt + (r.lastActivity ? ', last sign of life ' + time(r.lastActivity) : '') }),
      h('td'));
  }

  function childrenOf(run, depth, ctx) {
    const box = h('div', { class: 'children' });
    for (const c of run.collapsed || []) {
      const parts = Object.entries(c.byStatus || {}).map(([s, n]) => n + ' ' + (STATUS[s] ? STATUS[s].label : s));
      box.appendChild(h('div', { class: 'collapsed-note' },
        h('b', { text: c.total + ' runs of ' + c.saga }), ' (' + parts.join(', ') + '); only those that did not commit are listed'));
    }
    const kids = run.children;
    if (kids.length <= MANY_CHILDREN || (run.collapsed || []).length) { // counted by the server: list what it listed
      for (const c of kids) box.appendChild(runNode(c, depth + 1, ctx));
      return box;
    }
    const shown = kids.filter(c => c.status !== 'COMMITTED' || c.runId === ctx.highlight);
    const bySaga = new Map();
    for (const c of kids) {
      const m = bySaga.get(c.saga) || new Map();
      m.set(c.status, (m.get(c.status) || 0) + 1);
      bySaga.set(c.saga, m);
    }
    for (const [saga, m] of bySaga) {
      const total = [...m.values()].reduce((a, b) => a + b, 0);
      box.appendChild(h('div', { class: 'collapsed-note' }, h('b', { text: total + ' runs of ' + saga }),
        ' (' + [...m].map(([s, n]) => n + ' ' + (STATUS[s] ? STATUS[s].label : s)).join(', ') + ')'));
    }
    const list = h('div');
    for (const c of shown.slice(0, 500)) list.appendChild(runNode(c, depth + 1, ctx));
    box.appendChild(list);
    box.appendChild(h('button', { type: 'button', class: 'small', onclick: e => {
      clear(list);
      for (const c of kids) list.appendChild(runNode(c, depth + 1, ctx));
      e.target.remove();
    } }, 'Show all ' + kids.length + ' runs (' + (kids.length - shown.length) + ' committed ones are hidden)'));
    return box;
  }

  // ---- the timeline (Gantt)

  function timeline(view, all, now) {
    const end = view.finished ? null : Date.parse(now);
    const ms = t => (t ? Date.parse(t) : null);
    let lo = ms(view.launchedAt);
    let hi = lo;
    for (const r of all) {
      for (const t of [r.createdAt, r.startedAt, r.finishedAt]) if (t) { lo = Math.min(lo, ms(t)); hi = Math.max(hi, ms(t)); }
      for (const s of r.steps) for (const t of [s.startedAt, s.endedAt]) if (t) hi = Math.max(hi, ms(t));
    }
    if (end) hi = Math.max(hi, end);
    const span = Math.max(hi - lo, 1);
    const pct = t => ((t - lo) / span * 100).toFixed(3) + '%';
    const width = (a, b) => (Math.max(b - a, 0) / span * 100).toFixed(3) + '%';
    const box = h('section', { class: 'timeline', id: 'timeline', 'aria-labelledby': 'timeline-title' });
    box.appendChild(h('div', { class: 'legend', 'aria-label': 'Legend' },
      legend('k-STEP', 'step'), legend('k-CHILD_FAILURE_HANDLER', 'child-failure handler'),
      legend('k-ROLLBACK_CHILDREN', 'rolling back children'), legend('k-COMPENSATION', 'compensation'),
      legend('k-failed', 'failed'), legend('k-ATTEMPT_FAILED', 'failed attempt (retried)'), legend('k-PARKED', 'parked'),
      legend('k-running', 'running now'), legend('k-TASK', 'external task waiting'), h('span', null, h('span', { class: 'tl-wait' }), 'waiting for its children'),
      h('span', { class: 'muted', text: 'total ' + duration(span) })));
    const axis = h('div', { class: 'tl-row tl-axis', 'aria-hidden': 'true' }, h('div', { class: 'tl-label muted', text: 'run' }));
    const lane = h('div', { class: 'tl-lane' });
    for (let i = 0; i <= 4; i++) {
      lane.appendChild(h('span', { class: 'tl-tick' + (i === 0 ? ' first' : i === 4 ? ' last' : ''), style: { left: (i * 25) + '%' },
        text: '+' + duration(span * i / 4) }));
    }
    axis.appendChild(lane);
    box.appendChild(axis);
    const rows = all.slice(0, TIMELINE_ROWS);
    for (const r of rows) {
      const row = h('div', { class: 'tl-row' });
      row.appendChild(h('div', { class: 'tl-label', style: { paddingLeft: (r._depth * 12) + 'px' }, title: r.saga + ' ' + r.status },
        h('span', { 'aria-hidden': 'true', text: (STATUS[r.status] || {}).icon + ' ' }), r.saga));
      const l = h('div', { class: 'tl-lane', role: 'img', 'aria-label': r.saga + ': ' + r.steps.length + ' transactions, ' + r.status });
      const start = ms(r.startedAt) || ms(r.createdAt);
      const stop = ms(r.finishedAt) || end || hi;
      l.appendChild(h('div', { class: 'tl-span', style: { left: pct(start), width: width(start, stop) } }));
      r.steps.forEach((s, i) => {
        const a = ms(s.startedAt) || ms(s.endedAt);
        const b = ms(s.endedAt) || a;
        if (a === null) return;
        if (s.launched.length) {
          const next = r.steps[i + 1];
          const until = next ? (ms(next.startedAt) || ms(next.endedAt)) : (ms(r.finishedAt) || end || hi);
          if (until > b) {
            l.appendChild(h('div', { class: 'tl-wait', style: { left: pct(b), width: width(b, until) },
              title: r.saga + ' waits for the ' + s.launched.length + ' message(s) ' + s.name + ' launched: ' + duration(until - b) }));
          }
        }
        l.appendChild(h('div', { class: 'tl-seg ' + (s.failure && !OWN_STYLE.has(s.kind) ? 'k-failed' : 'k-' + s.kind), style: { left: pct(a), width: width(a, b) },
          title: r.saga + ': ' + s.name + ' (' + (KIND[s.kind] || {}).label + (s.attempt ? ' ' + s.attempt : '') + ') ' + duration(b - a) + (s.failure ? ' ✗ ' + firstLine(s.failure.message) : '') }));
      });
      if (r.task && r.task.openedAt) { // an external task: a bar from its opening to its settling (or now)
        const a = ms(r.task.openedAt);
        const b = ms(r.task.settledAt) || end || hi;
        l.appendChild(h('div', { class: 'tl-seg k-TASK', style: { left: pct(a), width: width(a, b) },
          title: 'external task ' + r.task.name + (r.task.key ? ' (' + r.task.key + ')' : '') + ': ' + taskWords(r.task) + ', waited ' + duration(b - a) }));
      }
      if (r.running && r.running.since) { // the step in flight: a bar up to now, growing with each refresh
        const a = ms(r.running.since);
        const b = Math.max(end || hi, a);
        l.appendChild(h('div', { class: 'tl-seg k-running', style: { left: pct(a), width: width(a, b) },
          title: r.saga + ': ' + r.running.step + ' running on ' + (r.running.engine || '?') + ', attempt ' + r.running.attempt + ', ' + duration(b - a) + ' so far' }));
      }
      row.appendChild(l);
      box.appendChild(row);
    }
    if (all.length > rows.length) box.appendChild(h('p', { class: 'muted', text: (all.length - rows.length) + ' more runs are not drawn.' }));
    return box;
  }

  function legend(cls, label) {
    return h('span', null, h('span', { class: 'tl-seg ' + cls }), label);
  }

  // ---- audit and events

  /** An external task's state and who settled it: "completed by ops:ada". */
  function taskWords(t) {
    return t.state.toLowerCase().replace('_', ' ') + (t.settledBy ? ' by ' + t.settledBy : '');
  }

  /** An external task in the tree: key, state, who settled it, opened and settled, how long it waited. */
  function taskStory(t, now) {
    const waited = (Date.parse(t.settledAt || now) - Date.parse(t.openedAt));
    return (t.key ? 'key ' + t.key + ' · ' : '') + taskWords(t) + ' · opened ' + time(t.openedAt)
      + (t.settledAt ? ', settled ' + time(t.settledAt) + ', waited ' : ', waiting for ') + duration(waited);
  }

  /** The operators' actions, and who settled the hierarchy's external tasks (outside the dashboard too). */
  function auditTable(entries, settled) {
    const tasks = (settled || []).length ? h('div', { class: 'scroll' }, h('table', { id: 'task-settlements' },
      h('thead', null, h('tr', null, ['Settled', 'Who', 'Task', 'Key', 'State', 'Waited'].map(t => h('th', { text: t })))),
      h('tbody', null, settled.map(r => h('tr', null,
        h('td', { class: 'mono', text: time(r.task.settledAt) }), h('td', { class: 'actor', text: r.task.settledBy }),
        h('td', { text: r.task.name }), h('td', { class: 'mono', text: r.task.key || '–' }),
        h('td', { text: r.task.state.toLowerCase().replace('_', ' ') }),
        h('td', { text: duration(r.task.waitedMs) })))))) : null;
    if (!entries.length) {
      return h('div', null, h('p', { class: 'muted', id: 'audit', text: tasks
        ? 'No operator action was taken on this hierarchy in the dashboard; its external tasks were settled as follows.'
        : 'No operator action was taken on this hierarchy.' }), tasks);
    }
    return h('div', null, tasks, h('div', { class: 'scroll' }, h('table', { id: 'audit' },
      h('thead', null, h('tr', null, ['When', 'Who', 'Action', 'Scope', 'Why', 'Outcome'].map(t => h('th', { text: t })))),
      h('tbody', null, entries.map(e => h('tr', null,
        h('td', { class: 'mono', text: time(e.createdAt) }), h('td', { class: 'actor', text: e.actor }),
        h('td', { text: e.action }), h('td', null, e.scope.length ? idSpan(e.scope[e.scope.length - 1]) : 'whole message'),
        h('td', { class: 'msg reason', text: e.reason }), h('td', { class: 'msg', text: e.outcome })))))));
  }

  function eventsSection(message, first) {
    const tbody = h('tbody');
    const more = h('button', { type: 'button', class: 'small' }, 'Load more events');
    let last = 0;
    const add = events => {
      for (const e of events) {
        last = e.id;
        tbody.appendChild(h('tr', null,
          h('td', { class: 'mono', text: String(e.id) }), h('td', { class: 'mono', text: time(e.createdAt) }),
          h('td', { text: e.type }), h('td', { text: e.saga || '' }), h('td', { text: e.step || '' }),
          h('td', { class: 'mono', text: e.engine || '' }),
          h('td', null, e.lineage ? idSpan(e.lineage[e.lineage.length - 1]) : ''),
          h('td', { class: 'msg' }, e.exception ? [shortType(e.exception.type), ': ', firstLine(e.exception.message)] : ''),
          h('td', null, e.context ? h('details', null, h('summary', { text: 'context' }), h('pre', { text: JSON.stringify(e.context, null, 2) })) : '')));
      }
      more.hidden = events.length < 500;
    };
    add(first);
    more.addEventListener('click', async () => {
      more.disabled = true;
      try {
        add((await api('events?message=' + q(message) + '&after=' + last + '&limit=500')).events);
      } catch (e) {
        flash('Could not load events: ' + e.message, true);
      }
      more.disabled = false;
    });
    return h('details', { id: 'events' }, h('summary', { text: 'The raw event log (' + first.length + (first.length === 500 ? '+' : '') + ' events)' }),
      h('div', { class: 'scroll' }, h('table', null,
        h('thead', null, h('tr', null, ['Id', 'Time', 'Type', 'Saga', 'Step', 'Engine', 'Run', 'Exception', 'Context'].map(t => h('th', { text: t })))),
        tbody)), more);
  }

  // ---- actions: confirm what will happen, require a reason, record it

  function confirmAction(action, scope, message, runs, label) {
    const unfinished = runs.filter(r => !FINISHED.has(r.status));
    const undone = runs.filter(r => r.steps.some(s => s.kind === 'STEP' && !s.failure) && r.status !== 'ROLLED_BACK');
    const effects = [];
    let what;
    if (action === 'cancel') {
      what = 'Cancel ' + label + ': every run in it gives up at its next step boundary (a step already running finishes its code, then its transaction rolls back), and rolls back.';
      effects.push(unfinished.length + ' run(s) still running give up: ' + names(unfinished));
      effects.push('Then compensations run, children first, for the steps that committed in ' + undone.length + ' run(s): ' + names(undone));
    } else {
      what = 'Roll back ' + label + ': it committed; every run in it rolls back its whole history, children first.';
      effects.push('Compensations run for the committed steps of ' + undone.length + ' run(s): ' + names(undone));
      for (const r of undone.slice(0, 12)) {
        const steps = r.steps.filter(s => s.kind === 'STEP' && !s.failure).map(s => s.name);
        effects.push(r.saga + ': undo ' + steps.reverse().join(', then '));
      }
    }
    openDialog({
      title: (action === 'cancel' ? 'Cancel ' : 'Roll back ') + label + '?', what, effects,
      ok: action === 'cancel' ? 'Cancel it' : 'Roll it back',
      body: scope ? { action, lineage: scope } : { action, message },
    });
  }

  function confirmParked(action, run, parked) {
    const what = action === 'retry'
      ? 'Run step ' + (parked.step || parked.stepIndex) + ' of ' + run.saga + ' again now, from attempt 1 (it failed ' + parked.attempt + ' attempt(s)).'
      : 'Treat step ' + (parked.step || parked.stepIndex) + ' of ' + run.saga + ' as done WITHOUT running it: its work does not happen, and the run goes on with its next step.';
    openDialog({
      title: (action === 'retry' ? 'Retry ' : 'Mark done: ') + run.saga + '?', what,
      effects: parked.failure ? ['It is parked because: ' + shortType(parked.failure.type) + ': ' + firstLine(parked.failure.message)] : [],
      ok: action === 'retry' ? 'Retry now' : 'Mark it done', body: { action, lineage: run.lineage },
    });
  }

  /** Every parked run of a saga at once: the confirmation states how many there are now, and needs a reason. */
  async function confirmRetryAll(saga) {
    const count = await api('parked-count?saga=' + q(saga));
    openDialog({
      title: 'Retry all ' + count.parked + ' parked run' + (count.parked === 1 ? '' : 's') + ' of ' + saga + '?',
      what: 'Run the parked step of each of the ' + count.parked + ' parked runs of saga ' + saga + ' again now, from attempt 1.',
      effects: ['Done in batches of 1,000 runs, each its own transaction.',
        'Each hierarchy gets an audit entry with your name and this reason; each run a RETRIED event in its log.'],
      ok: 'Retry ' + count.parked + ' run' + (count.parked === 1 ? '' : 's'), body: { action: 'retry-parked', saga },
    });
  }

  function names(runs) {
    if (!runs.length) return 'none';
    const counts = new Map();
    for (const r of runs) counts.set(r.saga, (counts.get(r.saga) || 0) + 1);
    return [...counts].map(([s, n]) => n > 1 ? s + ' ×' + n : s).join(', ');
  }

  /**
   * The confirmation of an action: what it does, a reason, and for a task's completion its JSON result, checked as
   * it is typed and repeated as it will be sent. {@code spec.bodies}: one action per selected run, each audited.
   */
  function openDialog(spec) {
    const dialog = document.getElementById('confirm');
    document.getElementById('confirm-title').textContent = spec.title;
    document.getElementById('confirm-what').textContent = spec.what;
    const ul = clear(document.getElementById('confirm-effects'));
    for (const e of spec.effects) ul.appendChild(h('li', { text: e }));
    const reason = document.getElementById('confirm-reason');
    const ok = document.getElementById('confirm-ok');
    const error = document.getElementById('confirm-error');
    const resultBox = document.getElementById('confirm-result-box');
    const resultText = document.getElementById('confirm-result');
    const resultCheck = document.getElementById('confirm-result-check');
    const wantsResult = spec.result !== null && spec.result !== undefined;
    resultBox.hidden = !wantsResult;
    resultText.value = wantsResult ? spec.result : '';
    let parsed = { valid: !wantsResult, value: undefined };
    const checkResult = () => {
      if (!wantsResult) return;
      try {
        parsed = { valid: true, value: JSON.parse(resultText.value) };
        resultCheck.className = 'muted';
        resultCheck.textContent = 'Sends the result: ' + JSON.stringify(parsed.value);
      } catch (err) {
        parsed = { valid: false, value: undefined };
        resultCheck.className = 'error';
        resultCheck.textContent = 'Not JSON yet: ' + err.message;
      }
    };
    const enable = () => { ok.disabled = !reason.value.trim() || !parsed.valid; };
    checkResult();
    reason.value = '';
    error.textContent = '';
    ok.textContent = spec.ok;
    ok.disabled = true;
    reason.oninput = enable;
    resultText.oninput = () => { checkResult(); enable(); };
    document.getElementById('confirm-cancel').onclick = () => dialog.close();
    document.getElementById('confirm-form').onsubmit = async e => {
      e.preventDefault();
      if (!reason.value.trim() || !parsed.valid) return;
      ok.disabled = true;
      const bodies = spec.bodies || [spec.body];
      const extra = wantsResult ? { result: parsed.value } : {};
      try {
        const outcomes = [];
        for (const body of bodies) {
          try {
            outcomes.push((await post('action', { ...body, ...extra, reason: reason.value.trim() })).outcome);
          } catch (err) {
            if (bodies.length === 1) throw err;
            outcomes.push('not done: ' + err.message);
          }
        }
        dialog.close();
        const action = bodies[0].action;
        flash(bodies.length === 1
          ? 'Done: ' + action + ' → ' + outcomes[0] + ' (recorded in the audit)'
          : 'Done: ' + action + ' for ' + bodies.length + ' runs → ' + tally(outcomes) + ' (each recorded in the audit)');
        render();
      } catch (err) {
        error.textContent = err.message;
        ok.disabled = false;
      }
    };
    dialog.showModal();
    (wantsResult ? resultText : reason).focus();
  }

  /** Outcomes counted: "REQUESTED ×3, ALREADY_FINISHED". */
  function tally(outcomes) {
    const counts = new Map();
    for (const o of outcomes) counts.set(o, (counts.get(o) || 0) + 1);
    return [...counts].map(([o, n]) => n > 1 ? o + ' ×' + n : o).join(', ');
  }

  // ---- search

  /**
   * Messages found by what was typed (an id, an idempotency or business key, a tag, an external task's key or token):
   * one match opens it, several are listed newest first, 50 a page.
   */
  async function searchPage(main, text, params, token) {
    const before = params.get('before') || '';
    const found = await api('search?q=' + q(text) + '&limit=50' + (before ? '&before=' + q(before) : ''));
    if (!current(token)) return;
    document.title = 'Search · Coop';
    if (found.matches.length === 1 && !before && !found.next) {
      location.replace('#/h/' + q(found.matches[0].messageId));
      return;
    }
    clear(main).appendChild(h('h1', { text: 'Search: ' + text }));
    if (!found.matches.length) {
      main.appendChild(h('p', { class: 'muted', text: before
        ? 'No older message matches.'
        : 'No message has this id, idempotency key, business key or tag, and no external task this key or token.' }));
      return;
    }
    main.appendChild(h('p', { class: 'muted', id: 'search-count',
      text: found.matches.length + (found.next ? '+' : '') + ' match' + (found.matches.length === 1 ? '' : 'es') + ', newest first' }));
    main.appendChild(h('div', { class: 'scroll' }, h('table', { class: 'search' },
      h('thead', null, h('tr', null, ['Message', 'Topic', 'Launched', 'Matched by'].map(t => h('th', { text: t })))),
      h('tbody', null, found.matches.map(m => h('tr', null,
        h('td', null, h('a', { href: '#/h/' + q(m.messageId) }, idSpan(m.messageId)), copyButton(m.messageId)),
        h('td', { text: m.topic }), h('td', { class: 'mono', text: time(m.launchedAt) }), h('td', { text: m.matchedBy })))))));
    const pager = h('div', { class: 'toolbar' });
    const path = '#/search/' + q(text);
    if (before) pager.appendChild(h('button', { type: 'button', onclick: () => { location.hash = path; } }, '⇤ Newest'));
    if (found.next) pager.appendChild(h('button', { type: 'button', id: 'older',
      onclick: () => { location.hash = path + '?before=' + q(found.next); } }, 'Older →'));
    main.appendChild(pager);
  }

  // ---- counts over time

  const WINDOWS = [['15m', 15], ['1h', 60], ['3h', 180], ['12h', 720], ['24h', 1440], ['7d', 10080]];
  const FIT_FROM = 180; // without a chosen window: the last 3 hours, narrowed to the smallest window that holds them
  const OUTCOMES = [['committed', 'COMMITTED', 'committed'], ['rolledBack', 'ROLLED_BACK', 'rolled back'],
    ['rollbackFailed', 'ROLLBACK_FAILED', 'rollback failed'], ['parked', 'PARKED', 'parked']];

  /** Launched, committed, rolled back and parked runs per saga and minute, over the chosen window. */
  async function countsPage(main, params, token) {
    const chosen = Number(params.get('minutes')) || 0;
    const data = await api('counts?minutes=' + (chosen || FIT_FROM));
    if (!current(token)) return;
    const minutes = chosen || fittedWindow(data);
    document.title = 'Counts · Coop';
    clear(main).appendChild(h('h1', { text: 'Counts over time' }));
    main.appendChild(h('div', { class: 'chips', role: 'group', 'aria-label': 'Window' }, WINDOWS.map(([label, m]) =>
      h('button', { type: 'button', 'aria-pressed': String(m === minutes), onclick: () => go('counts', { minutes: String(m) }) },
        'last ' + label))));
    if (!chosen) {
      main.appendChild(h('p', { class: 'muted', id: 'counts-fitted', text: 'The window fits the activity of the last 3 hours: the last '
        + minutes + ' minutes (choose another above).' }));
    }
    const bySaga = new Map();
    for (const row of data.counts) {
      if (!bySaga.has(row.saga)) bySaga.set(row.saga, []);
      bySaga.get(row.saga).push(row);
    }
    if (!bySaga.size) {
      main.appendChild(h('p', { class: 'muted', text: 'No run was launched or finished in the last ' + minutes + ' minutes.' }));
      return;
    }
    const end = Math.floor(new Date(data.now).getTime() / 60000);
    const columns = Math.min(minutes, 720); // at most 720 bars: longer windows add minutes up per bar
    const per = Math.ceil(minutes / columns);
    const table = h('table', { id: 'counts' }, h('thead', null, h('tr', null,
      ['Saga', 'Launched', 'Committed', 'Rolled back', 'Rollback failed', 'Parked', 'Per ' + (per === 1 ? 'minute' : per + ' minutes')]
        .map(t => h('th', { text: t })))));
    const body = h('tbody');
    for (const [saga, rows] of [...bySaga].sort((a, b) => a[0].localeCompare(b[0]))) {
      const sum = k => rows.reduce((a, r) => a + r[k], 0);
      body.appendChild(h('tr', { 'data-saga': saga },
        h('td', null, h('a', { href: '#/runs?saga=' + q(saga), text: saga })),
        h('td', { class: 'num', text: String(sum('launched')) }),
        OUTCOMES.map(([k]) => h('td', { class: 'num', text: String(sum(k)) })),
        h('td', null, countChart(rows, end, columns, per, saga))));
    }
    table.appendChild(body);
    main.appendChild(h('div', { class: 'scroll' }, table));
    main.appendChild(h('div', { class: 'legend' }, legendBox('launched', 'launched (line)'),
      OUTCOMES.map(([k, status, label]) => legendBox(status, label))));
    main.appendChild(h('p', { class: 'muted', text: 'Minutes of the database\'s clock, newest on the right; counted as runs are launched and finish (a rollup kept by the database, never a scan of the log).' }));
    main.appendChild(h('p', { class: 'muted', id: 'counts-both', text: 'A run rolled back after it committed (an operator\'s rollback, or a failure above it undoing it) is counted twice: as committed in the minute it committed, and as rolled back in the minute its compensations finished.' }));
    main.appendChild(h('div', { class: 'toolbar' }, h('button', { type: 'button', onclick: render }, '↻ Refresh')));
  }

  /** The smallest window that holds every minute of the rows (the last 3 hours), 15 minutes at least. */
  function fittedWindow(data) {
    const now = Math.floor(new Date(data.now).getTime() / 60000);
    const oldest = data.counts.reduce((a, r) => Math.max(a, now - Math.floor(new Date(r.minute).getTime() / 60000)), 0);
    const fits = WINDOWS.map(([, m]) => m).filter(m => m <= FIT_FROM).find(m => m > oldest);
    return fits || FIT_FROM;
  }

  function legendBox(cls, label) {
    return h('span', null, h('span', { class: 'cbar c-' + cls }), label);
  }

  /** One column per minute (or group of minutes): outcomes stacked, launches as a mark; the numbers in its title. */
  function countChart(rows, end, columns, per, saga) {
    const bins = Array.from({ length: columns }, () => ({ launched: 0, committed: 0, rolledBack: 0, rollbackFailed: 0, parked: 0 }));
    for (const r of rows) {
      const back = end - Math.floor(new Date(r.minute).getTime() / 60000);
      const i = columns - 1 - Math.floor(back / per);
      if (i < 0 || i >= columns) continue;
      for (const k of Object.keys(bins[i])) bins[i][k] += r[k];
    }
    const max = Math.max(1, ...bins.map(b => Math.max(b.launched, b.committed + b.rolledBack + b.rollbackFailed + b.parked)));
    const total = rows.reduce((a, r) => a + r.launched, 0);
    const chart = h('div', { class: 'cchart', role: 'img', 'aria-label': saga + ': ' + total + ' launched in the window' });
    bins.forEach((b, i) => {
      const col = h('div', { class: 'ccol', title: (columns - 1 - i) * per + ' min ago: ' + b.launched + ' launched, '
        + b.committed + ' committed, ' + b.rolledBack + ' rolled back, ' + b.rollbackFailed + ' rollback failed, ' + b.parked + ' parked' });
      for (const [k, status] of OUTCOMES) {
        if (b[k]) col.appendChild(h('div', { class: 'cbar c-' + status, style: { height: (100 * b[k] / max).toFixed(1) + '%' } }));
      }
      if (b.launched) col.appendChild(h('div', { class: 'cmark', style: { bottom: (100 * b.launched / max).toFixed(1) + '%' } }));
      chart.appendChild(col);
    });
    return chart;
  }

  // ---- schedules and joins

  async function schedulesPage(main, token) {
    const schedules = await api('schedules');
    if (!current(token)) return;
    document.title = 'Schedules · Coop';
    clear(main).appendChild(h('h1', { text: 'Schedules' }));
    if (!schedules.length) {
      main.appendChild(h('p', { class: 'muted', text: 'No schedules.' }));
      return;
    }
    schedules.sort((a, b) => (a.nextDue || '9').localeCompare(b.nextDue || '9'));
    main.appendChild(h('div', { class: 'scroll' }, h('table', { id: 'schedules' },
      h('thead', null, h('tr', null, ['Name', 'Topic', 'When', 'Next due', 'Last fired', 'Last message', 'Skipped'].map(t => h('th', { text: t })))),
      h('tbody', null, schedules.map(s => h('tr', null,
        h('td', { text: s.name }), h('td', { text: s.topic }),
        h('td', null, s.schedule, s.paused ? h('span', { class: 'badge s-PARKED', text: '‖ paused' }) : null),
        h('td', { class: 'mono', text: s.nextDue ? time(s.nextDue) : '—' }),
        h('td', { class: 'mono', text: time(s.lastFiredAt) }),
        h('td', null, s.lastMessage ? h('a', { href: '#/h/' + q(s.lastMessage) }, idSpan(s.lastMessage)) : ''),
        h('td', { text: String(s.skipped) })))))));
  }

  async function joinsPage(main, params, token) {
    const key = params.get('key') || '';
    const id = params.get('id') || '';
    const joins = key || id ? await api('joins?' + (id ? 'id=' + q(id) : 'key=' + q(key))) : null;
    if (!current(token)) return;
    document.title = 'Joins · Coop';
    clear(main).appendChild(h('h1', { text: 'Joins' }));
    const input = h('input', { id: 'join-key', value: key || id, placeholder: 'join key or join id' });
    const form = h('form', { class: 'toolbar' }, h('label', null, 'Key or id', input), h('button', { type: 'submit' }, 'Look up'));
    form.addEventListener('submit', e => {
      e.preventDefault();
      const v = input.value.trim();
      go('joins', /^[0-9a-f-]{36}$/i.test(v) ? { id: v } : { key: v });
    });
    main.appendChild(form);
    if (!joins) {
      main.appendChild(h('p', { class: 'muted', text: 'Joins are found by their key (the one given to JoinSpec) or id.' }));
      return;
    }
    if (!joins.length) main.appendChild(h('p', { class: 'muted', text: 'No join with that key or id.' }));
    for (const j of joins) {
      const pending = j.members.filter(m => m.state === 'PENDING');
      main.appendChild(h('h2', null, j.key || j.id, ' ', h('span', { class: 'badge s-' + (j.status === 'OPEN' ? 'WAITING' : j.status === 'COMPLETED' ? 'COMMITTED' : 'ROLLED_BACK'), text: j.status })));
      main.appendChild(h('div', { class: 'meta' },
        h('span', null, 'expected ', h('b', { text: String(j.expected) })), h('span', null, 'attached ', h('b', { text: String(j.attached) })),
        h('span', null, 'completed ', h('b', { text: String(j.completed) })), h('span', null, 'failed ', h('b', { text: String(j.failed) })),
        h('span', null, 'pending ', h('b', { text: String(pending.length) })),
        j.timeoutAt ? h('span', null, 'times out ', h('b', { text: time(j.timeoutAt) })) : null,
        h('span', null, 'then publishes on ', h('b', { text: j.onCompleteTopic || '' }))));
      main.appendChild(h('div', { class: 'scroll' }, h('table', null,
        h('thead', null, h('tr', null, ['Member', 'State', 'Attached', 'Settled'].map(t => h('th', { text: t })))),
        h('tbody', null, j.members.map(m => h('tr', null,
          h('td', null, h('a', { href: '#/h/' + q(m.message) }, idSpan(m.message))), h('td', { text: m.state + (m.reported ? ' (reported)' : '') }),
          h('td', { class: 'mono', text: time(m.attachedAt) }), h('td', { class: 'mono', text: time(m.settledAt) })))))));
    }
  }

  // ---- start

  async function start() {
    document.getElementById('skip').addEventListener('click', () => document.getElementById('main').focus());
    document.getElementById('jump').addEventListener('submit', e => {
      e.preventDefault();
      const raw = document.getElementById('jump-id').value.trim();
      const v = raw.replace(/[\[\]\s]/g, '');
      if (!v) return;
      const ids = v.split(/[.,]/);
      const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
      if (!ids.every(id => uuid.test(id))) { // a key, a tag, a task's key or token: every match, newest first
        location.hash = '#/search/' + q(raw);
        return;
      }
      location.hash = ids.length > 1 ? '#/run/' + ids.join('.') : '#/h/' + q(v);
    });
    document.addEventListener('keydown', e => {
      if (e.key === '/' && !/INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName)) {
        e.preventDefault();
        document.getElementById('jump-id').focus();
      }
    });
    try {
      session = await api('session');
    } catch (e) {
      flash('Could not start: ' + e.message, true);
      return;
    }
    document.getElementById('who').textContent = session.user + ' (' + session.role.toLowerCase() + ')';
    const logout = document.getElementById('logout');
    if (session.logout) {
      logout.hidden = false;
      logout.addEventListener('click', async () => {
        await fetch('logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-Coop-Csrf': session.csrf } });
        location.href = 'login';
      });
    }
    window.addEventListener('hashchange', () => { flash(''); render(); });
    render();
  }

  document.addEventListener('DOMContentLoaded', start);
})();
