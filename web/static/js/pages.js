// The registry of the console's pages, in the order of the navigation.
// Each page is a module exporting `page`:
//
//   { id, section, heading, setup(ctx), start(params), render(), relabel(), leave() }
//
// id names its link (#id), its catalogue key nav.<id> and, unless section
// names another, its element in index.html; heading is the id of the heading that gets focus when the
// page is opened. setup runs once with { info } (GET /api/scenarios);
// start once more with the page's query, to open a share link; render
// each time the page is shown; relabel after a change of language; leave
// when another page is shown (to stop polling, say). All but id are
// optional. Adding a page is its module and a line here.
import { page as play } from "./play.js";
import { page as debrief } from "./debrief.js";
import { page as model } from "./model.js";
import { page as lab } from "./lab.js";
import { page as assign } from "./assign.js";
import { page as quota } from "./quota.js";

export const pages = [play, debrief, model, lab, assign, quota];
