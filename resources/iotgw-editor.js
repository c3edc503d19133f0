/*
 * Shared editor code of @iotgateway/node-red-gateway, served once by Node-RED under
 * /resources/@iotgateway/node-red-gateway/iotgw-editor.js and included by each node's .html
 * with <script src="resources/@iotgateway/node-red-gateway/iotgw-editor.js">. Node-RED loads
 * it before the module's inline scripts run. Each .html keeps its literal
 * RED.nodes.registerType(...) call; this file holds what they share: the ${ENV_VAR} rule,
 * the validators, the node label, and the common dialog rows.
 */
(function () {
    'use strict';
    if (window.IOTGW) { return; }

    /** A whole setting that is ${ENV_VAR}: resolved at runtime, so the editor accepts it. */
    var ENV = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;

    function text(v) { return String(v === undefined || v === null ? '' : v).trim(); }

    /** The node's message `<type>.errors.<key>`, or false outside a node (no catalogue). */
    function say(node, type, key, opts) {
        return node && typeof node._ === 'function' ? node._(type + '.errors.' + key, opts) : false;
    }

    var IOTGW = {
        ENV: ENV,
        text: text,
        say: say,
        isEnv: function (v) { return ENV.test(text(v)); },
        /** An integer from min (to max). */
        intIn: function (min, max) {
            return function (s) { var n = Number(s); return Number.isInteger(n) && n >= min && (max === undefined || n <= max); };
        },
        /** A number from min to max. */
        numIn: function (min, max) {
            return function (s) { var n = Number(s); return String(s).trim() !== '' && isFinite(n) && n >= min && n <= max; };
        },
        /** A query parameter name. */
        isParam: function (s) { return /^[\w.\-[\]]{1,100}$/.test(s); },
        /**
         * A validator: '' (when `optional`), ${ENV_VAR}, or `test(value)`; else the message
         * `<type>.errors.<key>` (with `opts`).
         */
        check: function (type, test, key, optional, opts) {
            return function (v, _opt) {
                var s = text(v);
                if ((optional && s === '') || ENV.test(s) || (s !== '' && test(s))) { return true; }
                return say(this, type, key, opts);
            };
        },
        /** The node's label: its name, else `<type>.label.node`. */
        label: function (type) {
            return function () { return this.name || this._(type + '.label.node'); };
        },
        labelStyle: function () { return this.name ? 'node_label_italic' : ''; },
        /**
         * Expands the common dialog rows of the template of `type` (before the dialog opens):
         *   <div class="form-row" data-iotgw-row="FIELD ICON [WIDTH] [LABELKEY]">after</div>
         *     a label (fa-ICON, `<type>.label.LABELKEY`, default FIELD) and a text input
         *     #node-input-FIELD (WIDTH, '-' for none); with data-typed, also the hidden
         *     #node-input-FIELDType of a TypedInput;
         *   <div class="form-row" data-iotgw-check="FIELD [LABELKEY]"></div>
         *     a checkbox with its label on the right;
         *   <div class="form-row" data-iotgw-select="FIELD ICON [WIDTH] [LABELKEY]">options</div>
         *     a label and a <select> holding the options.
         * Other attributes of the row stay; content already in the row follows.
         */
        rows: function (type, prefix) {
            var tpl = document.querySelector('script[data-template-name="' + type + '"]');
            if (!tpl || tpl.getAttribute('data-iotgw-expanded')) { return; }
            var id = prefix || 'node-input';
            // The white space the written-out rows had between their elements (it shows as a gap).
            var SP = '\n        ';
            var END = '\n    </div>';
            var re = /<div([^>]*?) data-iotgw-(row|check|select)="([^"]+)"([^>]*)>([\s\S]*?)<\/div>/g;
            tpl.textContent = tpl.textContent.replace(re, function (_m, before, kind, spec, after, inner) {
                var p = spec.split(/\s+/);
                var f = id + '-' + p[0];
                var typed = / data-typed/.test(after);
                after = after.replace(/ data-typed/, '');
                if (kind === 'check') {
                    return '<div' + before + after + '>' + SP + '<label>&nbsp;</label>' + SP +
                        '<input type="checkbox" id="' + f + '" style="display: inline-block; width: auto; vertical-align: top;">' + SP +
                        '<label for="' + f + '" style="width: auto;" data-i18n="' + type + '.label.' + (p[1] || p[0]) + '"></label>' + inner + END;
                }
                var width = p[2] && p[2] !== '-' ? ' style="width: ' + p[2] + ';"' : '';
                var label = '<label for="' + f + '"><i class="fa fa-' + p[1] + '"></i> <span data-i18n="' + type + '.label.' + (p[3] || p[0]) + '"></span></label>';
                if (kind === 'select') {
                    return '<div' + before + after + '>' + SP + label + SP + '<select id="' + f + '"' + width + '>' + inner + '</select>' + END;
                }
                return '<div' + before + after + '>' + SP + label + SP + '<input type="text" id="' + f + '"' + width + '>' +
                    (typed ? SP + '<input type="hidden" id="' + f + 'Type">' : '') + inner + END;
            });
            tpl.setAttribute('data-iotgw-expanded', '1');
        }
    };
    window.IOTGW = IOTGW;
})();
