// `/auth/handoff.js`: the `form_post` hand-off's auto-submit (the provider's pages carry no inline
// script, so the Content-Security-Policy forbids every inline script). Without script the page
// shows a Continue button instead. Compiled into the provider by SwiftPM (`.embedInCode`).
document.getElementById("handoff").submit();
