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

    /** A select's options from data-iotgw-options ("VALUE[=KEY] ..."), or null without the attribute. */
    function options(type, field, spec) {
        if (spec === undefined) { return null; }
        return spec.trim().split(/\s+/).map(function (item) {
            var eq = item.indexOf('=');
            var value = eq < 0 ? item : item.slice(0, eq);
            var key = eq < 0 ? value : item.slice(eq + 1);
            return '<option value="' + value + '" data-i18n="' + type + '.' + (key.indexOf('.') < 0 ? field + '.' + key : key) + '"></option>';
        }).join('');
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
        /** A query parameter name (the broker's: idParam, pageParam). */
        isParam: function (s) { return /^[\w.\-[\]]{1,100}$/.test(s); },
        /** An app API query name (iotgw-user): 1 to 200 characters but white space (in `raw` as given too), =, &, # and ?. */
        isQueryName: function (s, raw) { return /^[^\s=&#?]{1,200}$/.test(raw === undefined ? s : String(raw)); },
        /**
         * A validator: '' (when `optional`), ${ENV_VAR}, or `test(value, raw)` (the value
         * trimmed, and as given); else the message `<type>.errors.<key>` (with `opts`).
         */
        check: function (type, test, key, optional, opts) {
            return function (v, _opt) {
                var s = text(v);
                if ((optional && s === '') || ENV.test(s) || (s !== '' && test(s, v))) { return true; }
                return say(this, type, key, opts);
            };
        },
        /** The node's label: its name, else `<type>.label.node`. */
        label: function (type) {
            return function () { return this.name || this._(type + '.label.node'); };
        },
        labelStyle: function () { return this.name ? 'node_label_italic' : ''; },
        /**
         * What a flow node's definition takes from here (spread into it, after its literal
         * category, color, defaults, inputs, outputs and icon): its dialog rows expanded
         * (IOTGW.rows), its label (IOTGW.label) and label style, and, as `ports` names them
         * ('input', 'output'), the port labels `<type>.label.input` and `<type>.label.output`.
         * A template with no Name row gets the house's one, last.
         */
        editor: function (type, ports) {
            var p = String(ports || '').split(/\s+/);
            var out = { label: IOTGW.label(type), labelStyle: IOTGW.labelStyle };
            if (p.indexOf('input') >= 0) { out.inputLabels = function () { return this._(type + '.label.input'); }; }
            if (p.indexOf('output') >= 0) { out.outputLabels = function () { return this._(type + '.label.output'); }; }
            var tpl = document.querySelector('script[data-template-name="' + type + '"]');
            if (tpl && !tpl.getAttribute('data-iotgw-expanded') && !/data-iotgw-row="name /.test(tpl.textContent)) {
                tpl.textContent = tpl.textContent.replace(/\s*$/, '\n    <div class="form-row" style="margin-top: 8px;" data-iotgw-row="name tag"></div>\n');
            }
            IOTGW.rows(type);
            return out;
        },
        /** A validator: one of `values` (compared with ===); else `<type>.errors.<key>`, or false without a key. */
        oneOf: function (type, values, key) {
            return function (v, _opt) {
                return values.indexOf(v) >= 0 || (key ? say(this, type, key) : false);
            };
        },
        /**
         * Shows the rows `target` (a selector) while the dialog's control `control` (a selector)
         * passes `test(control)` (a checkbox: while ticked), and at once when the dialog opens.
         */
        showWhen: function (control, target, test) {
            $(control).on('change', function () {
                var el = $(this);
                $(target).toggle(test ? !!test(el) : el.is(':checked'));
            }).trigger('change');
        },
        /** An account's label (iotgw-gateway, iotgw-app): its name, else its base URL, else the type. */
        accountLabel: function (type) {
            return function () { return this.name || this.baseUrl || type; };
        },
        /** Start from of a poller: now, -24h, or a UTC time (`real`: a real date only). */
        startFrom: function (real) {
            return function (s) {
                var m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(s);
                if (s === 'now' || /^-\d+(\.\d+)?\s*[smhd]$/.test(s)) { return true; }
                if (!m || !real) { return !!m; }
                // 2026-13-45 99:00:00 matches the pattern but is no date.
                var d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
                return !isNaN(d.getTime()) && d.toISOString().slice(0, 19).replace('T', ' ') === s;
            };
        },
        /**
         * A poller's context store <select> (#node-input-contextStore): '' = `dflt`, each
         * store of settings as `named(store)`; a store the flow names but this Node-RED
         * lacks stays selected and is flagged (#node-input-store-missing).
         */
        storeSelect: function (node, type, dflt, named) {
            var sel = $('#node-input-contextStore');
            var stores = (RED.settings.context && RED.settings.context.stores) || [];
            sel.append($('<option>').val('').text(dflt));
            stores.forEach(function (s) { sel.append($('<option>').val(s).text(named(s))); });
            if (node.contextStore && stores.indexOf(node.contextStore) < 0) {
                sel.append($('<option>').val(node.contextStore).text(node.contextStore + ' (' + node._(type + '.label.missingStore') + ')'));
            }
            sel.val(node.contextStore || '');
            function storeHint() {
                var v = sel.val();
                $('#node-input-store-missing').toggle(!!v && stores.indexOf(v) < 0);
            }
            sel.on('change', storeHint);
            storeHint();
        },
        /**
         * A config dialog's tabs, as the core MQTT broker dialog has them: the list
         * #node-config-TYPE-tabs (made before #node-config-TYPE-tabs-content when the
         * template has none); tab NAME (label `<type>.tabs.NAME`) shows the div
         * #TYPE-tab-NAME of #node-config-TYPE-tabs-content and hides the others.
         */
        tabs: function (node, type, names) {
            if (!$('#node-config-' + type + '-tabs').length) {
                $('<div class="form-row"><ul style="width: 100%; margin-bottom: 12px;"></ul></div>').insertBefore('#node-config-' + type + '-tabs-content')
                    .children('ul').attr('id', 'node-config-' + type + '-tabs');
            }
            var tabs = RED.tabs.create({
                id: 'node-config-' + type + '-tabs',
                onchange: function (tab) {
                    $('#node-config-' + type + '-tabs-content').children().hide();
                    $('#' + tab.id).show();
                }
            });
            names.forEach(function (t) {
                tabs.addTab({ id: type + '-tab-' + t, label: node._(type + '.tabs.' + t) });
            });
            setTimeout(function () { tabs.resize(); }, 0);
            return tabs;
        },
        /**
         * A config dialog's "test connection" row, built in the template's empty
         * <div id="node-config-TYPE-test-row"> (made, under a rule, after
         * #node-config-TYPE-tabs-content when the template has none): the button #node-config-TYPE-test, the tip
         * `<type>.test.what` and the result #node-config-TYPE-test-result. A click posts
         * `body()` (the values shown; a password field left as it is holds __PWRD__, which
         * the runtime reads as the stored secret) to the admin route `url` and shows the
         * answer {ok, code, message, ms} with a tick or a cross; a refusal (429: a test of
         * the user's is still running; 500: INTERNAL) with its code and message, and
         * `<type>.test.failed` when the runtime does not answer. Nothing is echoed. A secret
         * left as it is is tested only at the node's deployed base URL and TLS setting
         * (issue 34): with another base URL or TLS setting shown, `<type>.test.typeAgain`
         * says to type it again, and nothing is posted (the runtime refuses it as well).
         */
        testButton: function (node, type, url, body) {
            var id = 'node-config-' + type + '-test';
            if (!$('#' + id + '-row').length) {
                $('<div></div>').attr('id', id + '-row').insertAfter($('<hr>').insertAfter('#node-config-' + type + '-tabs-content'));
            }
            var row = $('#' + id + '-row').empty();
            var line = $('<div class="form-row"></div>').appendTo(row);
            var button = $('<button type="button" class="red-ui-button"><i class="fa fa-plug"></i> </button>').attr('id', id).appendTo(line);
            $('<span></span>').text(node._(type + '.test.button')).appendTo(button);
            line.append(' ');
            $('<span class="form-tips" style="margin-left: 8px; border: none; padding: 0;"></span>').text(node._(type + '.test.what')).appendTo(line);
            var result = $('<div class="form-row" style="display:none; white-space: pre-wrap; word-break: break-word;"></div>').attr('id', id + '-result').appendTo(row);
            function show(ok, text) {
                result.empty().show().css('color', ok === null ? '' : ok ? 'var(--red-ui-text-color-success, #3c763d)' : 'var(--red-ui-text-color-error, #d6615f)');
                $('<i class="fa"></i>').addClass(ok === null ? 'fa-spinner fa-spin' : ok ? 'fa-check' : 'fa-times').appendTo(result);
                $('<span></span>').text(' ' + text).appendTo(result);
            }
            /** A field left as it is, while the base URL or TLS setting shown is not the node's own. */
            function movedSecret(b) {
                var creds = b.credentials || {};
                var left = Object.keys(creds).some(function (k) { return creds[k] === '__PWRD__'; });
                var tls = RED.nodes.node(node.tls) ? node.tls : '';
                return left && (text(b.baseUrl) !== text(node.baseUrl) || text(b.tls) !== text(tls));
            }
            button.on('click', function () {
                var b = body();
                if (movedSecret(b)) { show(false, node._(type + '.test.typeAgain')); return; }
                button.prop('disabled', true);
                show(null, node._(type + '.test.running'));
                $.ajax({ url: url, type: 'POST', contentType: 'application/json', data: JSON.stringify(b), timeout: 30000 })
                    .done(function (r) {
                        show(!!r.ok, (r.ok ? '' : (r.code ? r.code + ': ' : '')) + r.message + ' (' + r.ms + ' ms)');
                    })
                    .fail(function (xhr) {
                        var r = xhr.responseJSON;
                        show(false, r && r.message ? (r.code ? r.code + ': ' : '') + r.message : node._(type + '.test.failed', { status: xhr.status || 'no answer' }));
                    })
                    .always(function () { button.prop('disabled', false); });
            });
        },
        /** A config dialog's field value (#node-config-input-KEY) as text; a tls-config picker's only when it names a node. */
        configValue: function (key) {
            var v = String($('#node-config-input-' + key).val() || '');
            return key === 'tls' && !RED.nodes.node(v) ? '' : v;
        },
        /** An account's base URL: https://host[:port][/path], or http:// on loopback only; no user:password@. */
        isBaseUrl: function (v) {
            var m = /^(https?):\/\/([^/:?#@]+|\[[^\]]+\])(:\d+)?(\/[^?#]*)?$/i.exec(text(v));
            if (!m) { return false; }
            return m[1].toLowerCase() === 'https' || /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(m[2]);
        },
        /** A base URL validator: required (`<type>.errors.baseUrlRequired`) unless `optional`, else `<type>.errors.baseUrl`. */
        baseUrlCheck: function (type, optional) {
            return function (v, _opt) {
                var s = text(v);
                if (s === '') { return optional ? true : say(this, type, 'baseUrlRequired'); }
                return ENV.test(s) || IOTGW.isBaseUrl(s) || say(this, type, 'baseUrl');
            };
        },
        /** A number from min to max (an integer when `integer`): else `<type>.errors.intRange|numRange`. */
        range: function (type, min, max, integer) {
            var test = integer ? IOTGW.intIn(min, max) : IOTGW.numIn(min, max);
            return IOTGW.check(type, test, integer ? 'intRange' : 'numRange', false, { min: min, max: max });
        },
        /** `validate` where an empty value is allowed too (it means a default the runtime picks). */
        emptyOr: function (validate) {
            return function (v, opt) {
                return text(v) === '' || validate.call(this, v, opt);
            };
        },
        /**
         * What an account dialog (iotgw-gateway, iotgw-app) does when it opens: the reason
         * under a bad base URL (#node-config-baseUrl-error, `<type>.errors.baseUrl`), its four
         * tabs, and the test button posting to `url` the fields `fields` and the credentials
         * `creds` shown.
         */
        accountDialog: function (node, type, url, fields, creds) {
            $('<div id="node-config-baseUrl-error" class="form-tips" style="display:none; color: var(--red-ui-text-color-error, #d6615f);"></div>')
                .text(node._(type + '.errors.baseUrl')).insertAfter('#node-config-input-baseUrl');
            $('#node-config-input-baseUrl').on('change keyup input', function () {
                var v = text($(this).val());
                $('#node-config-baseUrl-error').toggle(v !== '' && !IOTGW.isBaseUrl(v) && !ENV.test(v));
            }).trigger('change');
            // Tabs, as the core MQTT broker dialog has them.
            IOTGW.tabs(node, type, ['connection', 'credentials', 'limits', 'shared']);
            // Test connection: one harmless call through the runtime with the values shown here.
            IOTGW.testButton(node, type, url, function () {
                var b = { id: node.id, credentials: {} };
                fields.forEach(function (k) { b[k] = IOTGW.configValue(k); });
                creds.forEach(function (k) { b.credentials[k] = IOTGW.configValue(k); });
                return b;
            });
        },
        /**
         * Expands the common dialog rows of the template of `type` (before the dialog opens):
         *   <div class="form-row" data-iotgw-row="FIELD ICON [WIDTH] [LABELKEY]">after</div>
         *     a label (fa-ICON, `<type>.label.LABELKEY`, default FIELD) and a text input
         *     #node-input-FIELD (WIDTH, '-' for none); with data-typed, also the hidden
         *     #node-input-FIELDType of a TypedInput;
         *   <div class="form-row" data-iotgw-check="FIELD [LABELKEY]"></div>
         *     a checkbox with its label on the right;
         *   <div class="form-row" data-iotgw-select="FIELD ICON [WIDTH] [LABELKEY]">options</div>
         *     a label and a <select> holding the options; with data-iotgw-options="VALUE[=KEY] ...",
         *     the select holds one option a VALUE (an empty VALUE: '=KEY') labelled
         *     `<type>.KEY` (KEY without a dot: `FIELD.KEY`; no KEY: `FIELD.VALUE`), and the
         *     row's content follows the select.
         * Other attributes of the row stay; content already in the row follows. An attribute
         * data-input-ATTR="v" of the row goes onto the input as ATTR="v" (e.g.
         * data-input-type="password", data-input-placeholder="..."). `prefix` is the id
         * prefix: node-input (default) or node-config-input for a config node.
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
                var extra = { type: 'text' };
                var grab = function (_a, name, val) { extra[name] = val; return ''; };
                before = before.replace(/ data-input-([\w-]+)="([^"]*)"/g, grab);
                after = after.replace(/ data-input-([\w-]+)="([^"]*)"/g, grab);
                var grabOptions = function (_a, val) { extra.options = val; return ''; };
                before = before.replace(/ data-iotgw-options="([^"]*)"/, grabOptions);
                after = after.replace(/ data-iotgw-options="([^"]*)"/, grabOptions);
                var attrs = '';
                Object.keys(extra).forEach(function (k) { if (k !== 'type' && k !== 'options') { attrs += ' ' + k + '="' + extra[k] + '"'; } });
                if (kind === 'check') {
                    return '<div' + before + after + '>' + SP + '<label>&nbsp;</label>' + SP +
                        '<input type="checkbox" id="' + f + '" style="display: inline-block; width: auto; vertical-align: top;">' + SP +
                        '<label for="' + f + '" style="width: auto;" data-i18n="' + type + '.label.' + (p[1] || p[0]) + '"></label>' + inner + END;
                }
                var width = p[2] && p[2] !== '-' ? ' style="width: ' + p[2] + ';"' : '';
                var label = '<label for="' + f + '"><i class="fa fa-' + p[1] + '"></i> <span data-i18n="' + type + '.label.' + (p[3] || p[0]) + '"></span></label>';
                if (kind === 'select') {
                    var listed = options(type, p[0], extra.options);
                    return '<div' + before + after + '>' + SP + label + SP + '<select id="' + f + '"' + width + '>' +
                        (listed === null ? inner + '</select>' : listed + '</select>' + inner) + END;
                }
                return '<div' + before + after + '>' + SP + label + SP + '<input type="' + extra.type + '" id="' + f + '"' + width + attrs + '>' +
                    (typed ? SP + '<input type="hidden" id="' + f + 'Type">' : '') + inner + END;
            });
            tpl.setAttribute('data-iotgw-expanded', '1');
        }
    };
    window.IOTGW = IOTGW;
})();

/*
 * The feed pollers' dialogs (iotgw-status-poller, iotgw-message-poller, iotgw-terminal-updates)
 * share their polling block: its defaults and checks (IOTGW.poller.defaults), its rows (IOTGW.rows
 * writes them where the template has <div data-iotgw-poller></div>), and its labels and context
 * store select (IOTGW.poller.editor, spread into the definition). Each type's catalogue
 * holds the texts (`<type>.label.*`, `<type>.output.*`, `<type>.tip.*`, `<type>.errors.*`).
 */
(function () {
    'use strict';
    var IOTGW = window.IOTGW;
    if (!IOTGW || IOTGW.poller) { return; }

    /** Each checked setting: its test, its message key, whether it may be empty. */
    var TESTS = {
        intervalSeconds: [IOTGW.numIn(1, 86400), 'interval', false],
        startFrom: [IOTGW.startFrom(true), 'startFrom', true],
        fullAt: [IOTGW.intIn(1, 1000000), 'fullAt', false],
        feedName: [function (s) { return /^[A-Za-z0-9._:-]{1,100}$/.test(s); }, 'feedName', true]
    };

    /** The polling block of a template, as row markers (TYPE: the node type). */
    var ROWS = [
        '<div class="form-row" data-iotgw-row="intervalSeconds clock-o 70px interval"> <span data-i18n="TYPE.label.seconds"></span></div>',
        '<div class="form-row" data-iotgw-row="startFrom step-backward" data-input-placeholder="now | -24h | 2026-01-31 00:00:00"></div>',
        '<div class="form-row" data-iotgw-select="output sign-out"><option value="record" data-i18n="TYPE.output.record"></option>' +
            '<option value="batch" data-i18n="TYPE.output.batch"></option></div>',
        '<div class="form-row" data-iotgw-select="contextStore database"></div>',
        '<div class="form-row" id="node-input-store-missing" style="display:none; color: var(--red-ui-text-color-error, #d6615f);" data-i18n="TYPE.errors.missingStore"></div>',
        '<div class="form-tips" data-i18n="TYPE.tip.store"></div>',
        '<div class="form-row" style="margin-top: 8px;" data-iotgw-row="fullAt battery-full 70px"></div>',
        '<div class="form-row" data-iotgw-check="autoStart"></div>',
        '<div class="form-row" data-iotgw-row="feedName share-alt" data-input-placeholder="(this node\'s id)"></div>',
        '<div class="form-tips" data-i18n="TYPE.tip.feedName"></div>'
    ];

    /** Writes the polling block into the template of `type` (once, before IOTGW.rows expands its rows). */
    function pollerBlock(type) {
        var tpl = document.querySelector('script[data-template-name="' + type + '"]');
        if (!tpl || tpl.getAttribute('data-iotgw-expanded')) { return; }
        var block = ROWS.join('\n    ').replace(/TYPE\./g, type + '.');
        tpl.textContent = tpl.textContent.replace(/<div data-iotgw-poller><\/div>/, block);
    }

    /** The validator of the polling setting `key` of `type`'s dialog. */
    function check(type, key) {
        if (key === 'output') {
            return function (v, _opt) { return v === 'record' || v === 'batch' || IOTGW.say(this, type, 'output'); };
        }
        var t = TESTS[key];
        return IOTGW.check(type, t[0], t[1], t[2]);
    }

    // IOTGW.rows expands <div data-iotgw-poller></div> too (into the polling block's rows).
    var rows = IOTGW.rows;
    IOTGW.rows = function (type, prefix) {
        pollerBlock(type);
        rows(type, prefix);
    };

    IOTGW.poller = {
        check: check,
        /**
         * The polling block's defaults (each key written out in the node's `defaults`, its value
         * from here): intervalSeconds, startFrom, output, contextStore, autoStart, fullAt, feedName.
         */
        defaults: function (type) {
            return {
                intervalSeconds: { value: 60, validate: check(type, 'intervalSeconds') },
                startFrom: { value: '', validate: check(type, 'startFrom') },
                output: { value: 'record', required: true, validate: check(type, 'output') },
                contextStore: { value: '' },
                autoStart: { value: true },
                fullAt: { value: 500, validate: check(type, 'fullAt') },
                feedName: { value: '', validate: check(type, 'feedName') }
            };
        },
        /**
         * What a poller's definition takes from here (spread into it): what IOTGW.editor gives
         * (the rows, with the polling block, and the label), the port labels (the control
         * input; one msg per record or per poll) and the dialog's context store select
         * (`<type>.label.defaultStore`, `<type>.label.contextStoreNamed`).
         */
        editor: function (type) {
            var out = IOTGW.editor(type, 'input');
            out.outputLabels = function () { return this._(type + '.output.' + (this.output === 'batch' ? 'batch' : 'record')); };
            out.oneditprepare = function () {
                var node = this;
                IOTGW.storeSelect(node, type, node._(type + '.label.defaultStore'), function (s) { return node._(type + '.label.contextStoreNamed', { store: s }); });
            };
            return out;
        }
    };
})();

/*
 * The sending nodes' outbox block (iotgw-send-message, iotgw-terminal-mode, iotgw-cancel; issue 45):
 * its defaults and checks (IOTGW.outbox.defaults; absent values valid, as older flows have none),
 * its rows (IOTGW.rows writes them where the template has <div data-iotgw-outbox></div>), and what
 * the dialog does as it opens (IOTGW.outbox.prepare: off and reject for an older node, the rows
 * shown only with the outbox on). Each type's catalogue holds the texts (`<type>.label.outbox*`,
 * `<type>.label.whenFull*`, `<type>.tip.outbox`, `<type>.errors.*`).
 */
(function () {
    'use strict';
    var IOTGW = window.IOTGW;
    if (!IOTGW || IOTGW.outbox) { return; }

    var ROWS = [
        '<div class="form-row" style="margin-top: 8px;" data-iotgw-select="outbox inbox"><option value="off" data-i18n="TYPE.label.outboxOff"></option>' +
            '<option value="on" data-i18n="TYPE.label.outboxOn"></option></div>',
        '<div class="iotgw-outbox-rows">',
        '<div class="form-row" data-iotgw-row="outboxName tag"></div>',
        '<div class="form-row" data-iotgw-row="ttlSeconds clock-o 90px"> s</div>',
        '<div class="form-row" data-iotgw-row="outboxMaxEntries list 90px"></div>',
        '<div class="form-row" data-iotgw-row="outboxMaxBytes hdd-o 120px"></div>',
        '<div class="form-row" data-iotgw-select="whenFull ban"><option value="reject" data-i18n="TYPE.label.whenFullReject"></option>' +
            '<option value="drop-oldest" data-i18n="TYPE.label.whenFullDrop"></option></div>',
        '<div class="form-tips" data-i18n="TYPE.tip.outbox"></div>',
        '</div>'
    ];

    /** Writes the outbox block into the template of `type` (once, before IOTGW.rows expands its rows). */
    function outboxBlock(type) {
        var tpl = document.querySelector('script[data-template-name="' + type + '"]');
        if (!tpl || tpl.getAttribute('data-iotgw-expanded')) { return; }
        var block = ROWS.join('\n    ').replace(/TYPE\./g, type + '.');
        tpl.textContent = tpl.textContent.replace(/<div data-iotgw-outbox><\/div>/, block);
    }

    var rows = IOTGW.rows;
    IOTGW.rows = function (type, prefix) {
        outboxBlock(type);
        rows(type, prefix);
    };

    IOTGW.outbox = {
        /** The outbox settings' defaults (each key written out in the node's `defaults`, its value from here). */
        defaults: function (type) {
            return {
                outbox: { value: 'off', validate: IOTGW.emptyOr(IOTGW.oneOf(type, ['off', 'on'], 'outbox')) },
                outboxName: { value: '', validate: IOTGW.emptyOr(IOTGW.check(type, function (s) { return s.length <= 200; }, 'outboxName')) },
                ttlSeconds: { value: 3600, validate: IOTGW.emptyOr(IOTGW.check(type, IOTGW.numIn(1, 31536000), 'ttlSeconds')) },
                outboxMaxEntries: { value: 10000, validate: IOTGW.emptyOr(IOTGW.check(type, IOTGW.intIn(1, 10000000), 'outboxMaxEntries')) },
                outboxMaxBytes: { value: 67108864, validate: IOTGW.emptyOr(IOTGW.check(type, IOTGW.intIn(1024, 1099511627776), 'outboxMaxBytes')) },
                whenFull: { value: 'reject', validate: IOTGW.emptyOr(IOTGW.oneOf(type, ['reject', 'drop-oldest'], 'whenFull')) }
            };
        },
        /** In oneditprepare: an older node's empty settings shown as off and reject; the rows only with the outbox on. */
        prepare: function (node) {
            if (!node.outbox) { $('#node-input-outbox').val('off'); }
            if (!node.whenFull) { $('#node-input-whenFull').val('reject'); }
            IOTGW.showWhen('#node-input-outbox', '.iotgw-outbox-rows', function (el) { return el.val() === 'on'; });
        }
    };
})();
