/* corral-computer-private.h — what the computer tool's files share (not installed).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Input the model got wrong: sets G_IO_ERROR_INVALID_ARGUMENT with the message; FALSE. */
gboolean corral_computer_refuse (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);

G_END_DECLS
