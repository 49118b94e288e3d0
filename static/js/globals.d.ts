// Globals of the page, for `tsc --checkJs` only (nothing here is served): Plotly.js is a
// classic script (plotly.js's cartesian bundle, static/vendor), loaded before the modules; only
// core/plotly.js reads it (and sets it back when the gl3d bundle has run).
interface Window {
  Plotly: any;
}
