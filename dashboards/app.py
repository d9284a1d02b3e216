"""fabricscope fabric-health dashboard: the router (pages live in app_pages/, data in data.py).

Run with ``fabricscope dashboard [--data DIR]`` (or ``streamlit run dashboards/app.py``).
"""

import streamlit as st

st.set_page_config(page_title="fabricscope", page_icon=":material/lan:", layout="wide")
st.navigation(
    [
        st.Page("app_pages/overview.py", title="Overview", icon=":material/monitor_heart:", default=True),
        st.Page("app_pages/port.py", title="Port", icon=":material/settings_ethernet:"),
        st.Page("app_pages/topology.py", title="Topology", icon=":material/hub:"),
        st.Page("app_pages/layers.py", title="Layers", icon=":material/layers:"),
        st.Page("app_pages/expected.py", title="Expected vs achieved", icon=":material/speed:"),
        st.Page("app_pages/whatif.py", title="What-if", icon=":material/tune:"),
    ]
).run()
