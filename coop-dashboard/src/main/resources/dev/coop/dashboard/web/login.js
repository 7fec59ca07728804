'use strict';
if (new URLSearchParams(location.search).has('failed')) {
  document.getElementById('failed').hidden = false;
}
