/* corralctl-agent.h — `corralctl agent VM "task"`: the agent loop on a terminal.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

int corralctl_agent_main (int argc, char **argv);
