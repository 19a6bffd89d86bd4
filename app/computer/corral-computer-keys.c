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

/* The US keyboard as XT scancodes (set 1; E0-prefixed keys as 0x80 | code): the characters of
 * each key unshifted and shifted, by row. */
static const struct {
        guint8 scancode;
        char plain, shifted;
} us_chars[] = {
        { 0x29, '`', '~' },  { 0x02, '1', '!' },  { 0x03, '2', '@' }, { 0x04, '3', '#' },
        { 0x05, '4', '$' },  { 0x06, '5', '%' },  { 0x07, '6', '^' }, { 0x08, '7', '&' },
        { 0x09, '8', '*' },  { 0x0a, '9', '(' },  { 0x0b, '0', ')' }, { 0x0c, '-', '_' },
        { 0x0d, '=', '+' },  { 0x10, 'q', 'Q' },  { 0x11, 'w', 'W' }, { 0x12, 'e', 'E' },
        { 0x13, 'r', 'R' },  { 0x14, 't', 'T' },  { 0x15, 'y', 'Y' }, { 0x16, 'u', 'U' },
        { 0x17, 'i', 'I' },  { 0x18, 'o', 'O' },  { 0x19, 'p', 'P' }, { 0x1a, '[', '{' },
        { 0x1b, ']', '}' },  { 0x2b, '\\', '|' }, { 0x1e, 'a', 'A' }, { 0x1f, 's', 'S' },
        { 0x20, 'd', 'D' },  { 0x21, 'f', 'F' },  { 0x22, 'g', 'G' }, { 0x23, 'h', 'H' },
        { 0x24, 'j', 'J' },  { 0x25, 'k', 'K' },  { 0x26, 'l', 'L' }, { 0x27, ';', ':' },
        { 0x28, '\'', '"' }, { 0x2c, 'z', 'Z' },  { 0x2d, 'x', 'X' }, { 0x2e, 'c', 'C' },
        { 0x2f, 'v', 'V' },  { 0x30, 'b', 'B' },  { 0x31, 'n', 'N' }, { 0x32, 'm', 'M' },
        { 0x33, ',', '<' },  { 0x34, '.', '>' },  { 0x35, '/', '?' }, { 0x39, ' ', ' ' },
};

/* The keys that are not characters. */
static const struct {
        guint32 keysym;
        guint8 scancode;
} us_keys[] = {
        { XKB_KEY_Escape, 0x01 },
        { XKB_KEY_BackSpace, 0x0e },
        { XKB_KEY_Tab, 0x0f },
        { XKB_KEY_ISO_Left_Tab, 0x0f },
        { XKB_KEY_Return, 0x1c },
        { XKB_KEY_Control_L, 0x1d },
        { XKB_KEY_Shift_L, 0x2a },
        { XKB_KEY_Shift_R, 0x36 },
        { XKB_KEY_KP_Multiply, 0x37 },
        { XKB_KEY_Alt_L, 0x38 },
        { XKB_KEY_Meta_L, 0x38 },
        { XKB_KEY_Caps_Lock, 0x3a },
        { XKB_KEY_F1, 0x3b },
        { XKB_KEY_F2, 0x3c },
        { XKB_KEY_F3, 0x3d },
        { XKB_KEY_F4, 0x3e },
        { XKB_KEY_F5, 0x3f },
        { XKB_KEY_F6, 0x40 },
        { XKB_KEY_F7, 0x41 },
        { XKB_KEY_F8, 0x42 },
        { XKB_KEY_F9, 0x43 },
        { XKB_KEY_F10, 0x44 },
        { XKB_KEY_Num_Lock, 0x45 },
        { XKB_KEY_Scroll_Lock, 0x46 },
        { XKB_KEY_KP_7, 0x47 },
        { XKB_KEY_KP_8, 0x48 },
        { XKB_KEY_KP_9, 0x49 },
        { XKB_KEY_KP_Subtract, 0x4a },
        { XKB_KEY_KP_4, 0x4b },
        { XKB_KEY_KP_5, 0x4c },
        { XKB_KEY_KP_6, 0x4d },
        { XKB_KEY_KP_Add, 0x4e },
        { XKB_KEY_KP_1, 0x4f },
        { XKB_KEY_KP_2, 0x50 },
        { XKB_KEY_KP_3, 0x51 },
        { XKB_KEY_KP_0, 0x52 },
        { XKB_KEY_KP_Decimal, 0x53 },
        { XKB_KEY_F11, 0x57 },
        { XKB_KEY_F12, 0x58 },
        { XKB_KEY_KP_Enter, 0x9c },
        { XKB_KEY_Control_R, 0x9d },
        { XKB_KEY_KP_Divide, 0xb5 },
        { XKB_KEY_Print, 0xb7 },
        { XKB_KEY_Alt_R, 0xb8 },
        { XKB_KEY_Meta_R, 0xb8 },
        { XKB_KEY_ISO_Level3_Shift, 0xb8 },
        { XKB_KEY_Home, 0xc7 },
        { XKB_KEY_Up, 0xc8 },
        { XKB_KEY_Prior, 0xc9 },
        { XKB_KEY_Left, 0xcb },
        { XKB_KEY_Right, 0xcd },
        { XKB_KEY_End, 0xcf },
        { XKB_KEY_Down, 0xd0 },
        { XKB_KEY_Next, 0xd1 },
        { XKB_KEY_Insert, 0xd2 },
        { XKB_KEY_Delete, 0xd3 },
        { XKB_KEY_Super_L, 0xdb },
        { XKB_KEY_Super_R, 0xdc },
        { XKB_KEY_Menu, 0xdd },
        /* The image's right Alt is the Compose key (XKB option compose:ralt). */
        { XKB_KEY_Multi_key, 0xb8 },
};

gboolean
corral_computer_key_position (guint32 keysym, guint *scancode, gboolean *shift)
{
        *scancode = 0;
        *shift = FALSE;
        /* Latin-1 keysyms are their characters. */
        if (keysym >= 0x20 && keysym < 0x7f) {
                for (gsize i = 0; i < G_N_ELEMENTS (us_chars); i++) {
                        if (us_chars[i].plain == (char) keysym ||
                            us_chars[i].shifted == (char) keysym) {
                                *scancode = us_chars[i].scancode;
                                *shift = us_chars[i].plain != (char) keysym;
                                return TRUE;
                        }
                }
                return FALSE;
        }
        for (gsize i = 0; i < G_N_ELEMENTS (us_keys); i++) {
                if (us_keys[i].keysym == keysym) {
                        *scancode = us_keys[i].scancode;
                        return TRUE;
                }
        }
        return FALSE;
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
