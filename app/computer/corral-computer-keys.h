/* corral-computer-keys.h — what the assistant's "key", "hold_key" and "type" actions and a
 * click's modifier keys mean as X keysyms, the unit a VNC client sends (RFC 6143 §7.5.4).
 *
 * Key names follow xdotool, as the models were taught (Anthropic's computer tool): keys of one
 * combination joined by '+' ("ctrl+s", "ctrl+shift+t", "alt+F4"), combinations separated by
 * spaces ("ctrl+a ctrl+c"), names as X spells them ("Return", "Page_Down", "KP_Enter") in any
 * case, the usual short names ("ctrl", "alt", "shift", "super", "cmd", "enter", "esc", "del",
 * "pgup", "up"…), and any single character ("a", "@", "é"). Everything here is text the model
 * chose: bounded, and an unknown name is an error that names it, never a guess.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Keys in one combination, combinations in one action, bytes of one action's text. */
#define CORRAL_COMPUTER_COMBO_MAX 8
#define CORRAL_COMPUTER_COMBOS_MAX 16
#define CORRAL_COMPUTER_KEYS_TEXT_MAX 256

typedef struct {
        guint32 keysyms[CORRAL_COMPUTER_COMBO_MAX]; /* pressed in this order, released in reverse */
        guint n;
} CorralKeyCombo;

/* The combinations of text ("ctrl+a ctrl+c"): (transfer full) an array of CorralKeyCombo, or
 * NULL with G_IO_ERROR_INVALID_ARGUMENT saying which name is unknown or which limit was
 * passed. */
GArray *corral_computer_parse_keys (const char *text, GError **error);

/* The modifiers held during a click ("shift", "ctrl+alt"; NULL or "" for none): one
 * combination of modifier keys only. FALSE with G_IO_ERROR_INVALID_ARGUMENT otherwise. */
gboolean corral_computer_parse_modifiers (const char *text, CorralKeyCombo *combo, GError **error);

/* Text to type, one keysym per character: '\n' is Return, '\t' Tab; other control
 * characters, invalid UTF-8 and more than max_chars characters are refused.
 * (transfer full) an array of guint32, or NULL with G_IO_ERROR_INVALID_ARGUMENT. */
GArray *corral_computer_text_keysyms (const char *text, gsize max_chars, GError **error);

/* Where keysym's key sits on the VM's keyboard: its XT scancode (E0-prefixed keys as
 * 0x80 | code) and whether Shift is needed for it. Corral's images use the US layout, and so
 * does this table: the scancode is what reaches the guest (QEMU's extended key events), so a
 * symbol arrives as typed whatever the person's own layout, and Shift is pressed for "@" or "A"
 * as a person would. FALSE for a keysym the US keyboard has no key for ("é"). */
gboolean corral_computer_key_position (guint32 keysym, guint *scancode, gboolean *shift);

/* Whether keysym is a modifier (Shift, Control, Alt, Meta, Super, Hyper, ISO_Level3_Shift). */
gboolean corral_computer_keysym_is_modifier (guint32 keysym);

G_END_DECLS
