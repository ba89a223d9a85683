"use strict";
import { wireSignIn, el } from "/static/api.js";

wireSignIn(document.getElementById("signin"), () => {
  document.getElementById("view").append(el("p", { class: "muted", text: "replay" }));
});
