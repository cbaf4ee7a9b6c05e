package nova

import "time"

// OnAnswer adds fn to the listeners of every answer of Nova, Placement and the rest of the
// cloud from now on (how long it took, its status; 0: none came).
func (c *Client) OnAnswer(fn func(took time.Duration, status int)) { c.answers.On(fn) }
