/* ui-test-util.h — helpers for the UI tests: a display (Xvfb), waiting on the main loop,
 * finding widgets by role and name, and screenshots checked to be real renders.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <adwaita.h>

/* Prepares the environment (renderer, schema, a11y) and a display: the existing $DISPLAY, else
 * an Xvfb started here. Returns 77 (skip) when there is none and CORRAL_REQUIRE_UI is unset,
 * 1 on failure, 0 when ready. */
int ui_test_setup_display (void);
void ui_test_teardown_display (void);

/* Iterates the default main context until cond (data) or timeout_ms; FALSE on timeout. */
gboolean ui_test_wait (gboolean (*cond) (gpointer data), gpointer data, guint timeout_ms);
/* Lets the main loop run for ms (layout, frames). */
void ui_test_spin (guint ms);

/* The first visible widget below root whose accessible role is role and whose name (a button's
 * label without mnemonic underscores, a label's text, the accessible label property, or a
 * preferences row's title) is name. NULL when none. */
GtkWidget *ui_test_find (GtkWidget *root, GtkAccessibleRole role, const char *name);
/* The Preferences window over window, or NULL. */
GtkWidget *ui_test_find_preferences (GtkWindow *window);
/* The message dialog shown with that heading, or NULL. */
GtkWidget *ui_test_find_message_dialog (const char *heading);
/* For ui_test_wait: args is { window, row title, (out) row }; TRUE once the window's tasks
 * page lists a row titled so (visible: the page is shown). */
gboolean ui_test_row_listed (gpointer args);
/* The first widget below root of type (visible or not). */
GtkWidget *ui_test_find_type (GtkWidget *root, GType type);
/* Every button below root has a name screen readers can say; fails the test otherwise. */
void ui_test_assert_buttons_named (GtkWidget *root);

/* Renders widget, saves $CORRAL_BUILD_DIR/tests/ui/screenshots/NAME.png, and asserts it is a
 * real render (size, pixel variance, several colours). Returns the mean luminance (0-255). */
double ui_test_screenshot (GtkWidget *widget, const char *name);
/* widget as drawn now (after a short spin), as a texture of its size. (transfer full) */
GdkTexture *ui_test_render (GtkWidget *widget);
/* How far a view of a screen of screen_w x screen_h (the Screen panel's picture: the screen
 * scaled to fit view, centred) is from a screenshot of it (shot: any size, as the computer
 * tool scales it): both cut into 32 x 20 cells, the largest difference of a cell's mean colour,
 * 0-255, each cell inset by a pixel. */
double ui_test_view_distance (GdkTexture *view, GdkPixbuf *shot, int screen_w, int screen_h);
