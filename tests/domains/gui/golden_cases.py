"""Golden reward values produced by the authors' own code (not by ours).

GUI-G1: ``hit_reward``, ``iou_reward``, ``box_reward`` and ``parse_json`` from Yuqi-Zhou/GUI-G1
``src/open-r1-multimodal/src/open_r1/grpo_rec.py`` (snapshot e581fe98), called as TRL calls them
(``completions=[[{"content": text}]]``, ``solution=[gt]``, ``image=[PIL-like with width/height]``).
Row: (completion, gt [x1, y1, x2, y2], image [w, h], hit, 0.25*iou, 0.125*box).

UI-S1: ``gui_action_match_compute_score`` from X-PLUG/MobileAgent
``UI-S1/verl/utils/reward_score/gui_traj.py`` with ``gui_utils/utils.py`` and ``x/data/agent/json.py``
(snapshot 11cea575), extra_info = S1_SIZE. Row: (response, check_options, num_steps, score,
format_score, type_match, extract_match, step_reward).
"""

# fmt: off
G1_CASES = [
    ('```json\n[{"bbox_2d": [100, 50, 180, 90], "label": "Save"}]\n```', [100, 50, 180, 90], [1920, 1080], 1.0, 0.25, 0.125),
    ('[{"bbox_2d": [110, 55, 200, 95]}]', [100, 50, 180, 90], [1920, 1080], 1.0, 0.14080459770114942, 0.12422161976961602),
    ('[{"bbox_2d": [300, 300, 400, 350]}]', [100.5, 50.25, 180.75, 90.5], [1280, 800], 0.0, 0.0, 0.09389097038261669),
    ('[{"bbox_2d": [100, 50, 101, 51]}]', [100, 50, 180, 90], [640, 480], 1.0, 0.0, 0.11822412221094462),
    ('[{"bbox_2d": [10, 10, 10, 10]}]', [10, 10, 10, 10], [100, 100], 1.0, 0.0, 0.125),
    ('{"bbox_2d": [100, 50, 180, 90]}', [100, 50, 180, 90], [1920, 1080], 0.0, 0.0, 0.0),
    ('[100, 50, 180, 90]', [100, 50, 180, 90], [1920, 1080], 0.0, 0.0, 0.0),
    ('```json [{"bbox_2d": [100, 50, 180, 90]}] ```', [100, 50, 180, 90], [1920, 1080], 0.0, 0.0, 0.0),
    ('Sure!\n```json\n[{"bbox_2d": [0, 0, 1920, 1080]}]\n```\nDone', [960, 540, 1000, 600], [1920, 1080], 1.0, 0.00028935185185185184, 0.06476683937823835),
    ('[{"bbox_2d": [0, 0, 200, 100]}]', [100, 0, 300, 100], [200, 100], 1.0, 0.08333333333333333, 0.08333333333333333),
    ('[{"bbox_2d": ["1", "2", "3", "4"]}]', [0, 0, 5, 5], [10, 10], 0.0, 0.0, 0.0),
    ('[{"bbox_2d": [5, 5, 25, 25, 99]}, {"bbox_2d": [0, 0, 1, 1]}]', [0, 0, 20, 20], [50, 50], 1.0, 0.09782608695652174, 0.11249999999999999),
    ('[{"bbox_2d": [-50, 10, 80, 70]}]', [10, 10, 60, 60], [100, 100], 1.0, 0.08012820512820513, 0.08530805687203792),
    ('[{"bbox_2d": [12.5, 20.5, 30.25, 40.75]}]', [12, 20, 30, 41], [64, 64], 1.0, 0.23127753303964757, 0.12426709847740668),
    ('[{"point_2d": [10, 10]}]', [0, 0, 20, 20], [100, 100], 0.0, 0.0, 0.0),
    ('', [0, 0, 20, 20], [100, 100], 0.0, 0.0, 0.0),
]
S1_SIZE = {'width': 1080, 'height': 2400, 'resized_width': 1092, 'resized_height': 2408}
S1_CASES = [
    ('<think>\ntap it\n</think>\n<action>\n{"action": "click", "coordinate": [546, 1204]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 1.0, 1.0, True, True, 0.2),
    ('<think>\ntap edge\n</think>\n<action>\n{"action": "click", "coordinate": [592, 1265]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 0.55, 1.0, True, False, 0.0),
    ('<think>\nfar\n</think>\n<action>\n{"action": "click", "coordinate": [900, 300]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 0.55, 1.0, True, False, 0.0),
    ('<think>\nnear point\n</think>\n<action>\n{"action": "click", "coordinate": [600, 1300]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [], 'annotation': 'GOOD'}, 3, 0.55, 1.0, True, False, 0.0),
    ('<action>\n{"action": "click", "coordinate": [546, 1204]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 0.9, 0.0, True, True, 0.2),
    ('<think>\n   \n</think>\n<action>\n{"action": "long_press", "coordinate": [546, 1204], "time": 2}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 0.09000000000000001, 0.0, False, False, 0.0),
    ('<think>\nx\n</think>\n<action>\n{"action": "click"}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 0.1, 1.0, False, False, 0.0),
    ('<think>\nx\n</think>\n<action>\n{"action": "click", "coordinate": [1, 2]\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 0.0, 0.0, False, False, 0.0),
    ('<think>no action</think>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 0.0, 0.0, False, False, 0.0),
    ('<think>\nt\n</think>\n<action>\n{"action": "type", "text": "Sculpture"}\n</action>', {'action': 'type', 'text': 'Sculpture art', 'annotation': 'GOOD'}, 2, 1.0, 1.0, True, True, 0.5),
    ('<think>\nt\n</think>\n<action>\n{"action": "type", "text": "hello"}\n</action>', {'action': 'answer', 'text': 'Hello world', 'annotation': 'GOOD'}, 2, 1.0, 1.0, True, True, 0.5),
    ('<think>\nt\n</think>\n<action>\n{"action": "answer", "text": "hello"}\n</action>', {'action': 'answer', 'text': 'Hello world', 'annotation': 'GOOD'}, 2, 0.19, 1.0, False, False, 0.0),
    ('<think>\nt\n</think>\n<action>\n{"action": "type", "text": "abc"}\n</action>', {'action': 'key', 'text': 'xyz', 'annotation': 'GOOD'}, 2, 0.55, 1.0, True, False, 0.0),
    ('<think>\no\n</think>\n<action>\n{"action": "open", "text": "zoho meeting"}\n</action>', {'action': 'open', 'text': 'Zoho Meeting', 'annotation': 'GOOD'}, 4, 1.0, 1.0, True, True, 0.25),
    ('<think>\ns\n</think>\n<action>\n{"action": "swipe", "coordinate": [540, 600], "coordinate2": [540, 1800]}\n</action>', {'action': 'swipe', 'coordinate': [540, 600], 'coordinate2': [540, 1800], 'annotation': 'GOOD'}, 4, 0.55, 1.0, True, False, 0.0),
    ('<think>\ns\n</think>\n<action>\n{"action": "swipe", "coordinate": [540, 1800], "coordinate2": [540, 600]}\n</action>', {'action': 'swipe', 'coordinate': [540, 600], 'coordinate2': [540, 1800], 'annotation': 'GOOD'}, 4, 1.0, 1.0, True, True, 0.25),
    ('<think>\ns\n</think>\n<action>\n{"action": "swipe", "coordinate": [540, 1800], "coordinate2": [540, 600]}\n</action>', {'action': 'swipe', 'direction': 'down', 'annotation': 'GOOD'}, 4, 1.0, 1.0, True, True, 0.25),
    ('<think>\ns\n</think>\n<action>\n{"action": "swipe", "coordinate": [900, 1000], "coordinate2": [100, 1000]}\n</action>', {'action': 'swipe', 'direction': 'left', 'annotation': 'GOOD'}, 4, 1.0, 1.0, True, True, 0.25),
    ('<think>\nb\n</think>\n<action>\n{"action": "system_button", "button": "back"}\n</action>', {'action': 'system_button', 'button': 'Back', 'annotation': 'GOOD'}, 2, 1.0, 1.0, True, True, 0.5),
    ('<think>\nb\n</think>\n<action>\n{"action": "system_button", "button": "Home"}\n</action>', {'action': 'system_button', 'button': 'Back', 'annotation': 'GOOD'}, 2, 0.55, 1.0, True, False, 0.0),
    ('<think>\nw\n</think>\n<action>\n{"action": "wait", "time": 2}\n</action>', {'action': 'wait', 'time': 2, 'annotation': 'GOOD'}, 2, 1.0, 1.0, True, True, 0.5),
    ('<think>\nw\n</think>\n<action>\n{"action": "terminate", "status": "success"}\n</action>', {'action': 'wait', 'time': 2, 'annotation': 'GOOD'}, 2, 0.19, 1.0, False, False, 0.0),
    ('<think>\nh\n</think>\n<action>\n{"action": "click", "coordinate": [546, 1204]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'HARMFUL'}, 5, 0.1, 1.0, True, True, 0.2),
    ('<think>\nh\n</think>\n<action>\n{"action": "click", "coordinate": [10, 10]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'HARMFUL'}, 5, 0.55, 1.0, True, False, 0.0),
    ('<think>\nn\n</think>\n<action>\n{"action": "click", "coordinate": [546, 1204]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'NEUTRAL'}, 5, 0.55, 1.0, True, True, 0.2),
    ('<think>\nm\n</think>\n<action>\n{"action": "click", "coordinate": [546, 1204]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250]}, 5, 1.0, 1.0, True, True, 0.2),
    ('<think>\nl\n</think>\n<action>\n{"action": "click", "coordinate": [546, 1204]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [[456, 1100, 624, 1300], [0, 473, 1080, 2337]], 'annotation': 'GOOD'}, 5, 1.0, 1.0, True, True, 0.2),
    ('<think>\nl\n</think>\n<action>\n{"action": "click", "coordinate": [30, 30]}\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [[0, 0, 100, 100], [0, 0, 10, 10]], 'annotation': 'GOOD'}, 5, 1.0, 1.0, True, True, 0.2),
    ('<think>\nq\n</think>\n<action>\n["click"]\n</action>', {'action': 'click', 'coordinate': [540, 1200], 'candidate_bbox': [500, 1150, 580, 1250], 'annotation': 'GOOD'}, 5, 0.1, 1.0, False, False, 0.0),
]

# fmt: on

# UI-S1 system prompt as built by JsonFormat.gen_next_round (x/data/agent/json.py):
# MOBILE_USE.format(OUTPUT_FORMAT["thought_action"], generate_prompt(RAW_SPACE, None)).
UI_S1_SYSTEM_REFERENCE = 'You are a GUI agent. You are given a task and your action history, with screenshots. You need to perform the next action to complete the task. \n## Output Format\n\n```\n<think> ... </think>\n\n<action> ... </action>\n```\n\n## Action Space\n\nYou can perform the following actions:\n- key: Perform a key event on the mobile device using adb\'s `keyevent` syntax.\n- click: Click the point on the screen with specified (x, y) coordinates.\n- long_press: Press the point on the screen with specified (x, y) coordinates for a specified number of seconds.\n- swipe: Swipe from starting point with specified (x, y) coordinates to endpoint with specified (x2, y2) coordinates.\n- type: Input the specified text into the activated input box.\n- answer: Output the specified answer.\n- system_button: Press the specified system button: Back, Home, Menu, or Enter.\n- open: Open an application on the device specified by text.\n- wait: Wait for a specified number of seconds for changes to occur.\n- terminate: Terminate the current task and report its completion status: success or failure.\n\nThe arguments you can use are:\n- coordinate: (x, y): The x and y pixels coordinates from the left and top edges.\n- coordinate2: (x, y): The x and y pixels coordinates from the left and top edges for the endpoint of a swipe.\n- text: Text input required by actions like `key`, `type`, `answer`, and `open`.\n- time: The time in seconds required by actions like `long_press` and `wait`.\n- button: System buttons available for pressing: Back, Home, Menu, or Enter. Possible values: Back, Home, Menu, Enter.\n- status: The completion status of a terminated task. Possible values: success, failure.\n\nFormat your output as a JSON object with the selected action and its arguments at the same level.\n\nExample outputs:\n<action>\n{"action": "key", "text": "<value>"}\n</action>\n<action>\n{"action": "click", "coordinate": "<value>"}\n</action>\n\n## Note\n\n- Planing the task and explain your reasoning step-by-step in `think` part.\n- Write your action in the `action` part according to the action space.\n'
UI_S1_OUTPUT_FORMAT_REFERENCE = '```\n<think> ... </think>\n\n<action> ... </action>\n```'
