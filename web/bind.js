// Filling markup that views/ rendered. Each element with data-bind lists
// what to set from which field: "text=label" sets the text, "show=x" and
// "hide=x" the hidden flag, "value=x" an input's value, any other name the
// attribute of that name. Values only ever reach textContent or attributes,
// never HTML, so names, hosts and messages from Kubernetes cannot inject
// markup. Fields that are absent are left alone.

export function bind(root, fields) {
  const els = [...root.querySelectorAll('[data-bind]')];
  if (root.matches?.('[data-bind]')) els.unshift(root);
  for (const el of els) {
    for (const pair of el.dataset.bind.split(/\s+/)) {
      const [target, key] = pair.split('=');
      if (!key || !(key in fields)) continue;
      set(el, target, fields[key]);
    }
  }
}

function set(el, target, v) {
  switch (target) {
    case 'text':
      el.textContent = v == null ? '' : String(v);
      break;
    case 'show':
      el.hidden = !v;
      break;
    case 'hide':
      el.hidden = !!v;
      break;
    case 'value':
      el.value = String(v);
      el.setAttribute('value', String(v));
      break;
    default:
      if (v == null || v === false) el.removeAttribute(target);
      else el.setAttribute(target, String(v));
  }
}

// clone copies the first element of a <template> of the page.
export function clone(id) {
  const tpl = document.getElementById(id);
  if (!tpl) throw new Error(`the page has no template #${id}`);
  return tpl.content.firstElementChild.cloneNode(true);
}

// text makes an element holding only text.
export function text(tag, s, className = '') {
  const el = document.createElement(tag);
  el.textContent = s;
  if (className) el.className = className;
  return el;
}

// fill clones a <template> of the page and binds fields into the copy.
export function fill(id, fields) {
  const el = clone(id);
  bind(el, fields);
  return el;
}
