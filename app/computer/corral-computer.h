/* corral-computer.h — the assistant's computer tool: one action on the VM's screen, given as the
 * tool input the models send (Anthropic's computer_20250124 / computer_20251124 actions; the
 * same names for OpenAI-compatible servers and MCP), done through the VM's VNC connection
 * (CorralVnc) from the host, where the guest can neither fake nor watch it.
 *
 * Input:  {"action": "left_click", "coordinate": [x, y], "text": "shift"} and so on, in the
 *         model's coordinates (the scaled screenshot's; corral-computer-screen.h).
 * Result: a sentence for the model, and for every action that changes or shows the screen a
 *         screenshot taken once the screen has settled: no update for a short quiet window
 *         after the first one the action caused, capped, instead of a fixed sleep.
 *
 * Everything in the input is the model's choice: bounded and checked, an error names the
 * field and what is allowed. Actions run one at a time, in order.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <gdk-pixbuf/gdk-pixbuf.h>
#include <gio/gio.h>

#include "corral-computer-screen.h"
#include "corral-vnc.h"

G_BEGIN_DECLS

/* An action's settling: the screen's first update after it may come this late (a slow guest),
 * and it counts as settled once it has had no update for the quiet window; never longer than
 * the cap. */
#define CORRAL_COMPUTER_FIRST_UPDATE_MS 1000
#define CORRAL_COMPUTER_QUIET_MS 250
#define CORRAL_COMPUTER_SETTLE_CAP_MS 3000
/* "wait" and "hold_key" last at most this long; "scroll" moves at most this many steps; "type"
 * takes at most this many characters, sent in groups of CORRAL_COMPUTER_TYPE_GROUP. */
#define CORRAL_COMPUTER_MAX_DURATION_S 60
#define CORRAL_COMPUTER_MAX_SCROLL 50
#define CORRAL_COMPUTER_MAX_TYPE 4096
#define CORRAL_COMPUTER_TYPE_GROUP 50
/* How long an action waits for the person to give the screen back before it gives up. */
#define CORRAL_COMPUTER_HOLD_WAIT_S 300

typedef enum {
        CORRAL_COMPUTER_IMAGE_PNG,
        CORRAL_COMPUTER_IMAGE_JPEG,
} CorralComputerImageFormat;

typedef struct {
        char *text; /* for the model: what was done, or the pointer's position */
        GBytes *image; /* nullable: the screenshot (or the zoomed region) */
        const char *mime_type; /* "image/png" or "image/jpeg", with image */
        guint image_width, image_height;
        /* Where the action pointed, in the screenshot's coordinates, to mark it for the person
         * (has_point FALSE for keys, typing, waits and screenshots). */
        gboolean has_point;
        guint point_x, point_y;
} CorralComputerResult;

void corral_computer_result_free (CorralComputerResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralComputerResult, corral_computer_result_free)

#define CORRAL_TYPE_COMPUTER (corral_computer_get_type ())
G_DECLARE_FINAL_TYPE (CorralComputer, corral_computer, CORRAL, COMPUTER, GObject)

/* The tool on a connected vnc (a reference is kept). */
CorralComputer *corral_computer_new (CorralVnc *vnc);

void corral_computer_set_image_format (CorralComputer *self, CorralComputerImageFormat format);

/* The screen as the model sees it (zero sizes before the connection has a screen). */
void corral_computer_get_scale (CorralComputer *self, CorralScreenScale *scale);

/* Does input's action. Errors: G_IO_ERROR_INVALID_ARGUMENT for input the model got wrong (the
 * message says what to send instead), G_IO_ERROR_NOT_CONNECTED when the screen is gone,
 * G_IO_ERROR_CANCELLED. */
void corral_computer_run_async (CorralComputer *self,
                                const cJSON *input,
                                GCancellable *cancellable,
                                GAsyncReadyCallback callback,
                                gpointer user_data);
CorralComputerResult *
corral_computer_run_finish (CorralComputer *self, GAsyncResult *result, GError **error);

/* The person takes the screen ("Take control"): from now on nothing of the assistant's
 * reaches it. An action under way stops (releasing what it pressed) with G_IO_ERROR_BUSY and a
 * sentence for the model; one not yet begun waits for corral_computer_release() (at most
 * CORRAL_COMPUTER_HOLD_WAIT_S, then G_IO_ERROR_BUSY), and its result says it waited.
 * Screenshots, zoom and cursor_position send no input and go on. reason: for the model,
 * e.g. "the person is signing in". */
/* The boolean property "held" follows it (notify::held). */
void corral_computer_hold (CorralComputer *self, const char *reason);
void corral_computer_release (CorralComputer *self);
gboolean corral_computer_is_held (CorralComputer *self);

/* A screenshot of the whole screen at the model's scale, now (no settling). */
CorralComputerResult *corral_computer_screenshot (CorralComputer *self, GError **error);

/* pixbuf (RGB, 8 bits) as PNG, the way screenshots are encoded: fast row filtering and zlib's
 * fastest level. */
GBytes *corral_computer_encode_png (GdkPixbuf *pixbuf, GError **error);

/* The tool for providers and MCP clients that take a function tool: its input schema (JSON
 * text: the actions and fields above) and its description for a screen of width x height (the
 * model's), in English, for the model. (transfer full) */
extern const char corral_computer_tool_schema[];
char *corral_computer_tool_describe (guint width, guint height);

G_END_DECLS
