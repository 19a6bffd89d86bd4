/* corral-change-window.h — one change the assistant made, reviewed: a diff for text (unified or
 * side by side, highlighted), before and after for images, sizes for anything else; Open, Show
 * in Files and Undo This Change.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

#include "corral-task-changes.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_CHANGE_WINDOW (corral_change_window_get_type ())
G_DECLARE_FINAL_TYPE (CorralChangeWindow, corral_change_window, CORRAL, CHANGE_WINDOW, AdwWindow)

/* Shows change (copied); comparing happens on a worker thread. "undo" is emitted when the
 * person asks to undo it (the panel does it and closes the window). */
CorralChangeWindow *corral_change_window_new (GtkWindow *parent, const CorralTaskChange *change);

/* Tests: whether the comparison arrived, what is shown ("text", "image", "sizes", "none",
 * "loading") and the text of the unified diff and of the two sides. */
const char *corral_change_window_get_shown (CorralChangeWindow *self);
char *corral_change_window_get_text (CorralChangeWindow *self, const char *which);
void corral_change_window_show_side_by_side (CorralChangeWindow *self, gboolean side_by_side);

G_END_DECLS
