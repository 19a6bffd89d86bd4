/* corral-computer-keys.c — key names and text as X keysyms (see corral-computer-keys.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-computer-keys.h"
#include "corral-computer-private.h"

#include <gio/gio.h>
#include <glib/gi18n.h>
#include <string.h>
#include <xkbcommon/xkbcommon.h>

/* The short names models use for keys X spells otherwise, lower case. */
static const struct {
        const char *alias;
        const char *name;
} aliases[] = {
        { "ctrl", "Control_L" },   { "control", "Control_L" },   { "alt", "Alt_L" },
        { "option", "Alt_L" },     { "shift", "Shift_L" },       { "super", "Super_L" },
        { "win", "Super_L" },      { "windows", "Super_L" },     { "cmd", "Super_L" },
        { "command", "Super_L" },  { "meta", "Meta_L" },         { "altgr", "ISO_Level3_Shift" },
        { "enter", "Return" },     { "return", "Return" },       { "esc", "Escape" },
        { "escape", "Escape" },    { "backspace", "BackSpace" }, { "del", "Delete" },
        { "delete", "Delete" },    { "ins", "Insert" },          { "tab", "Tab" },
        { "space", "space" },      { "spacebar", "space" },      { "pgup", "Prior" },
        { "pageup", "Prior" },     { "page_up", "Prior" },       { "pgdn", "Next" },
        { "pagedown", "Next" },    { "page_down", "Next" },      { "up", "Up" },
        { "down", "Down" },        { "left", "Left" },           { "right", "Right" },
        { "arrowup", "Up" },       { "arrowdown", "Down" },      { "arrowleft", "Left" },
        { "arrowright", "Right" }, { "home", "Home" },           { "end", "End" },
        { "menu", "Menu" },        { "capslock", "Caps_Lock" },  { "printscreen", "Print" },
        { "plus", "plus" },        { "minus", "minus" },
};

gboolean
corral_computer_refuse (GError **error, const char *format, ...)
{
        va_list ap;
        g_autofree char *message = NULL;

        va_start (ap, format);
        message = g_strdup_vprintf (format, ap);
        va_end (ap);
        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, message);
        return FALSE;
}

gboolean
corral_computer_keysym_is_modifier (guint32 keysym)
{
        switch (keysym) {
        case XKB_KEY_Shift_L:
        case XKB_KEY_Shift_R:
        case XKB_KEY_Control_L:
        case XKB_KEY_Control_R:
        case XKB_KEY_Alt_L:
        case XKB_KEY_Alt_R:
        case XKB_KEY_Meta_L:
        case XKB_KEY_Meta_R:
        case XKB_KEY_Super_L:
        case XKB_KEY_Super_R:
        case XKB_KEY_Hyper_L:
        case XKB_KEY_Hyper_R:
        case XKB_KEY_ISO_Level3_Shift:
                return TRUE;
        default:
                return FALSE;
        }
}

/* One key's name (not empty, valid UTF-8) as a keysym; 0 when it names none. */
static guint32
name_to_keysym (const char *name)
{
        g_autofree char *lower = g_ascii_strdown (name, -1);
        xkb_keysym_t sym;

        for (gsize i = 0; i < G_N_ELEMENTS (aliases); i++) {
                if (g_str_equal (lower, aliases[i].alias))
                        return xkb_keysym_from_name (aliases[i].name, XKB_KEYSYM_NO_FLAGS);
        }
        /* One character: that character's key ("a", "A", "@", "é"). */
        if (g_utf8_strlen (name, -1) == 1) {
                gunichar c = g_utf8_get_char (name);

                if (g_unichar_iscntrl (c))
                        return 0;
                return xkb_utf32_to_keysym (c);
        }
        /* X's own names, exactly as spelt, then in any case ("return", "page_down"). */
        sym = xkb_keysym_from_name (name, XKB_KEYSYM_NO_FLAGS);
        if (sym == XKB_KEY_NoSymbol)
                sym = xkb_keysym_from_name (name, XKB_KEYSYM_CASE_INSENSITIVE);
        /* Not a name: "0x41" and "U0041" are xkb's spellings of numbers, not keys a model
         * means. */
        if (sym != XKB_KEY_NoSymbol &&
            (g_str_has_prefix (lower, "0x") || (lower[0] == 'u' && g_ascii_isxdigit (lower[1]))))
                return 0;
        return sym;
}

/* Shown in an error: the name as the model wrote it, escaped, cut to 40 characters. */
static char *
shown (const char *name)
{
        g_autofree char *cut = g_utf8_substring (name, 0, MIN (g_utf8_strlen (name, -1), 40));

        return g_strescape (cut, NULL);
}

static gboolean
parse_combo (const char *text, gsize len, CorralKeyCombo *combo, GError **error)
{
        g_autofree char *copy = g_strndup (text, len);
        const char *p = copy;

        combo->n = 0;
        while (TRUE) {
                /* '+' separates keys; a '+' where a name starts is the key itself ("ctrl++"). */
                const char *end = strchr (*p == '+' ? p + 1 : p, '+');
                gsize n = end ? (gsize) (end - p) : strlen (p);
                g_autofree char *name = g_strndup (p, n);
                guint32 sym;

                if (n == 0)
                        return corral_computer_refuse (
                                error,
                                _ ("“%s” has an empty key name (keys are joined by "
                                   "“+”, as in “ctrl+s”)"),
                                copy);
                sym = name_to_keysym (name);
                if (sym == 0) {
                        g_autofree char *s = shown (name);
                        return corral_computer_refuse (
                                error,
                                _ ("“%s” is not a key name; use X key names such as "
                                   "Return, Tab, Escape, BackSpace, Page_Down, F5, or one "
                                   "character"),
                                s);
                }
                if (combo->n == CORRAL_COMPUTER_COMBO_MAX)
                        return corral_computer_refuse (
                                error, _ ("At most %d keys can be pressed together"),
                                CORRAL_COMPUTER_COMBO_MAX);
                combo->keysyms[combo->n++] = sym;
                if (!end)
                        return TRUE;
                p = end + 1;
                if (*p == '\0')
                        return corral_computer_refuse (
                                error, _ ("“%s” ends with “+”: which key comes after it?"), copy);
        }
}

static gboolean
check_text (const char *text, GError **error)
{
        if (!text || !*text)
                return corral_computer_refuse (error, _ ("No keys were given"));
        if (strlen (text) > CORRAL_COMPUTER_KEYS_TEXT_MAX)
                return corral_computer_refuse (error, _ ("The keys are longer than %d bytes"),
                                               CORRAL_COMPUTER_KEYS_TEXT_MAX);
        if (!g_utf8_validate (text, -1, NULL))
                return corral_computer_refuse (error, _ ("The keys are not valid UTF-8 text"));
        return TRUE;
}

GArray *
corral_computer_parse_keys (const char *text, GError **error)
{
        g_autoptr (GArray) combos = g_array_new (FALSE, TRUE, sizeof (CorralKeyCombo));
        const char *p = text;

        if (!check_text (text, error))
                return NULL;
        while (TRUE) {
                CorralKeyCombo combo;
                gsize n;

                while (*p == ' ')
                        p++;
                if (*p == '\0')
                        break;
                n = strcspn (p, " ");
                if (combos->len == CORRAL_COMPUTER_COMBOS_MAX) {
                        corral_computer_refuse (
                                error, _ ("At most %d key combinations can be sent at once"),
                                CORRAL_COMPUTER_COMBOS_MAX);
                        return NULL;
                }
                if (!parse_combo (p, n, &combo, error))
                        return NULL;
                g_array_append_val (combos, combo);
                p += n;
        }
        if (combos->len == 0) {
                corral_computer_refuse (error, _ ("No keys were given"));
                return NULL;
        }
        return g_steal_pointer (&combos);
}

gboolean
corral_computer_parse_modifiers (const char *text, CorralKeyCombo *combo, GError **error)
{
        combo->n = 0;
        if (!text || !*text)
                return TRUE;
        if (!check_text (text, error))
                return FALSE;
        if (strchr (text, ' '))
                return corral_computer_refuse (error,
                                               _ ("Give the keys to hold during a click as one "
                                                  "combination, such as “shift” or “ctrl+alt”"));
        if (!parse_combo (text, strlen (text), combo, error))
                return FALSE;
        for (guint i = 0; i < combo->n; i++) {
                if (!corral_computer_keysym_is_modifier (combo->keysyms[i])) {
                        combo->n = 0;
                        return corral_computer_refuse (
                                error, _ ("Only modifier keys (shift, ctrl, alt, super) "
                                          "can be held during a click"));
                }
        }
        return TRUE;
}

GArray *
corral_computer_text_keysyms (const char *text, gsize max_chars, GError **error)
{
        g_autoptr (GArray) syms = g_array_new (FALSE, FALSE, sizeof (guint32));

        if (!text || !g_utf8_validate (text, -1, NULL)) {
                corral_computer_refuse (error, _ ("The text to type is not valid UTF-8"));
                return NULL;
        }
        for (const char *p = text; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);
                guint32 sym;

                if (syms->len == max_chars) {
                        corral_computer_refuse (
                                error,
                                _ ("The text to type is longer than %llu characters; type it "
                                   "in parts"),
                                (unsigned long long) max_chars);
                        return NULL;
                }
                if (c == '\n' || c == '\r')
                        sym = XKB_KEY_Return;
                else if (c == '\t')
                        sym = XKB_KEY_Tab;
                else if (g_unichar_iscntrl (c) || c == 0x200e || c == 0x200f ||
                         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) {
                        corral_computer_refuse (
                                error,
                                _ ("The text to type holds the control character U+%04X; only "
                                   "line breaks and tabs can be typed"),
                                (guint) c);
                        return NULL;
                } else
                        sym = xkb_utf32_to_keysym (c);
                if (sym == XKB_KEY_NoSymbol) {
                        corral_computer_refuse (error, _ ("U+%04X cannot be typed"), (guint) c);
                        return NULL;
                }
                /* "\r\n" is one line break. */
                if (c == '\n' && p > text && p[-1] == '\r')
                        continue;
                g_array_append_val (syms, sym);
        }
        return g_steal_pointer (&syms);
}
