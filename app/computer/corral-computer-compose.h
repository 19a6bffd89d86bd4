/* corral-computer-compose.h — typing a character the US keyboard has no key for ("é", "€",
 * "ß") as X's Compose sequence for it: the Compose key (the image's right Alt, XKB option
 * compose:ralt), then plain keys ("'" "e"). The sequences are X's own for UTF-8 locales
 * (libx11's en_US.UTF-8/Compose, the same file in the image), read once on this computer; only
 * sequences of keys the US keyboard has are kept.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Keys after the Compose key, at most. */
#define CORRAL_COMPUTER_COMPOSE_MAX 4

/* The keys (keysyms, after the Compose key) that type c, shortest first found; FALSE when X
 * has no such sequence (or its table cannot be read here). */
gboolean corral_computer_compose_sequence (gunichar c,
                                           guint32 keysyms[CORRAL_COMPUTER_COMPOSE_MAX],
                                           guint *n);

/* For tests: parses text (a Compose file) into a fresh table and looks c up in it. */
gboolean corral_computer_compose_sequence_in (const char *text,
                                              gunichar c,
                                              guint32 keysyms[CORRAL_COMPUTER_COMPOSE_MAX],
                                              guint *n);

G_END_DECLS
