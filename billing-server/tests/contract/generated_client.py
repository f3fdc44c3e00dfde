import sys; print("client: todo")
