// ESLint's flat config for the page's plain ES modules (static/js, run in the browser) and their
// Node unit tests (tests/js). Prettier formats; ESLint looks for mistakes (`npm run lint`).

import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["static/vendor/", "static/bundle/", "node_modules/", "test-artifacts/"] },
  js.configs.recommended,
  {
    rules: {
      // A key left out by rest destructuring ({ thumb, ...rest }) is the point, not a mistake;
      // a leading _ marks a parameter a view's render(container, data, selection, callbacks) keeps.
      "no-unused-vars": ["error", { ignoreRestSiblings: true, argsIgnorePattern: "^_" }],
    },
  },
  {
    files: ["static/js/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.browser, Plotly: "readonly" } },
  },
  {
    files: ["tests/js/**/*.mjs", "eslint.config.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.node } },
  },
];
