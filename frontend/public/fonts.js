// Run before the page is laid out: in WebKitGTK (Atrium's window on Linux),
// ask for fontconfig's default families instead of style.css's named stack
// (see .fc-fonts there). WebKitGTK looks every family of a stack up in
// fontconfig in turn, and each name that is not installed costs a lookup at
// every new style: on a machine with none of them, the window's first
// layout took 40-70 ms longer. Other engines keep the stack.
(function () {
  var ua = navigator.userAgent;
  if (/Linux/.test(ua) && /AppleWebKit/.test(ua) && !/Chrome|Chromium|Android/.test(ua)) {
    document.documentElement.classList.add('fc-fonts');
  }
})();
